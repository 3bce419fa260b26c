"""One table per kind of plugin (issue 41): sandbox backends, lease backends, model providers,
intake types and action families, each on the pattern of ``monitors/kinds.py``.

For each table: the setting that names an entry allows exactly the table's keys; importing the
table loads no implementation (an SDK loads only when its entry is used); every entry has a
test rig (a new entry without one fails here); and a throwaway entry, added in the test, is
used by the code that reads the table with no other change: one module plus one entry.
"""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import pytest

from guard.actions import kinds as action_kinds
from guard.actions.base import ActionContext, ActionResult
from guard.actions.registry import ActionRegistry
from guard.cluster import for_settings
from guard.cluster import kinds as lease_kinds
from guard.config import EndpointSettings, HASettings, SandboxSettings, Settings
from guard.config import intake as intake_config
from guard.config.intake import IntakeSource
from guard.hooks.mapping import Mapper
from guard.llm import endpoint_provider
from guard.llm import kinds as provider_kinds
from guard.notify import build_notifier, build_runners
from guard.notify import kinds as channel_kinds
from guard.redact import Redactor
from guard.sandbox import create_sandbox
from guard.sandbox import kinds as sandbox_kinds
from guard.store.db import open_database

pytestmark = pytest.mark.unit

# Where each entry is exercised for real: a new entry with no rig here fails
# ``test_every_entry_has_a_rig`` (as a monitor kind without ``rig_<type>`` fails its suite).
RIGS: dict[str, dict[str, str]] = {
    "sandbox": {
        "docker": "tests/contracts/test_sandbox_contract.py",
        "kubernetes": "tests/contracts/test_sandbox_contract.py",
        "local": "tests/contracts/test_sandbox_contract.py",
    },
    "lease": {
        "database": "tests/cluster/test_cluster_ha.py",
        "kubernetes": "tests/cluster/test_cluster_kube_lease.py",
    },
    "provider": {
        "openai": "tests/llm/test_providers.py",
        "anthropic": "tests/llm/test_providers.py",
    },
    "intake": {
        "alertmanager": "tests/intake/test_alertmanager.py",
        "grafana": "tests/intake/test_grafana_webhook.py",
        "webhook": "tests/intake/test_grafana_webhook.py",
    },
    "action": {
        "docker": "tests/agent/test_agent_learning.py",
        "http": "tests/skills/test_skills_review.py",
        "railway": "tests/railway/test_railway.py",
        "k8s": "tests/kubernetes/test_kubernetes_actions.py",
        "probe": "tests/probes/test_net.py",
        "host": "tests/hosts/test_ssh.py",
        "mcp": "tests/llm/test_mcp_servers.py",
        "compose": "tests/actions/test_compose.py",
        "postgres": "tests/actions/test_postgres.py",
        "disk": "tests/actions/test_disk.py",
    },
    "channel": {
        "telegram": "tests/notify/test_inbound_contract.py",
        "email": "tests/notify/email/test_email_channel.py",
        "slack": "tests/notify/test_inbound_contract.py",
        "matrix": "tests/matrix/test_matrix_run.py",
        "console": "tests/notify/test_console_channel.py",
    },
}
TABLES: dict[str, Mapping[str, Any]] = {
    "sandbox": sandbox_kinds.SANDBOX_BACKENDS,
    "lease": lease_kinds.LEASE_BACKENDS,
    "provider": provider_kinds.MODEL_PROVIDERS,
    "intake": intake_config.INTAKE_KINDS,
    "action": action_kinds.ACTION_FAMILIES,
    "channel": channel_kinds.CHANNELS,
}
ROOT = Path(__file__).resolve().parents[2]


def allowed(model: Any, field: str) -> set[str]:
    hint = model.model_fields[field].annotation
    return {v for v in get_args(hint) if isinstance(v, str)}


def test_each_setting_allows_exactly_its_tables_keys() -> None:
    assert allowed(SandboxSettings, "backend") == {
        sandbox_kinds.AUTO,
        *sandbox_kinds.SANDBOX_BACKENDS,
    }
    assert allowed(HASettings, "backend") == set(lease_kinds.LEASE_BACKENDS)
    assert allowed(EndpointSettings, "provider") == {"none", *provider_kinds.MODEL_PROVIDERS}
    assert set(get_args(intake_config.IntakeType)) == set(intake_config.INTAKE_KINDS)
    for name, kind in channel_kinds.CHANNELS.items():  # a channel: a settings section
        assert Settings.model_fields[name].annotation is kind.settings


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_entry_has_a_rig(table: str) -> None:
    missing = set(TABLES[table]) - set(RIGS[table])
    assert not missing, f"no test rig for {table} entries {sorted(missing)}: add one to RIGS"
    for entry, rig in RIGS[table].items():
        assert (ROOT / rig).is_file(), f"{table} {entry}: {rig} does not exist"


def test_the_tables_load_no_implementation() -> None:
    code = (
        "import sys, guard.sandbox.kinds, guard.cluster.kinds, guard.llm.kinds, "
        "guard.actions.kinds, guard.config.intake, guard.notify.kinds, guard.notify.related, "
        "guard.notify.running_gate; "
        "print(sorted(m for m in ('docker', 'kubernetes', 'httpx', 'jinja2', 'jmespath', "
        "'guard.sandbox.docker', 'guard.actions.docker', 'guard.llm.openai', 'telegram', "
        "'guard.notify.telegram.plug', 'slack_sdk', 'guard.notify.slack.plug', 'nio', "
        "'guard.notify.matrix.plug') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- a throwaway entry each: one module (here, a class in this file) plus one table entry ------


class EchoSandbox:
    """A backend that only says what it was asked."""

    def __init__(self, request: sandbox_kinds.SandboxRequest) -> None:
        self.request = request


def test_a_new_sandbox_backend_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = sandbox_kinds.SandboxBackend("echo", lambda _s, request: EchoSandbox(request))  # type: ignore[arg-type,return-value]
    monkeypatch.setitem(sandbox_kinds.SANDBOX_BACKENDS, "echo", entry)
    settings = SandboxSettings.model_construct(backend="echo")  # type: ignore[arg-type]
    made = create_sandbox(settings, incident_id="7", environ={})
    assert isinstance(made, EchoSandbox) and made.request.incident_id == "7"


def test_a_new_lease_backend_is_one_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked: list[str] = []

    def lease(settings: Settings, db: Any) -> None:
        asked.append(settings.ha.backend)
        return None

    monkeypatch.setitem(lease_kinds.LEASE_BACKENDS, "etcd", lease_kinds.LeaseBackend("etcd", lease))
    settings = Settings(ha={"enabled": True})
    settings.ha.__dict__["backend"] = "etcd"
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    # a lease needs Postgres; what is shown here is the table
    monkeypatch.setattr(type(db), "is_postgres", property(lambda _self: True))
    try:
        for_settings(settings, db)
    finally:
        db.dispose()
    assert asked == ["etcd"]


class ParrotProvider:
    def __init__(self, settings: EndpointSettings) -> None:
        self.settings = settings


def test_a_new_model_provider_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = provider_kinds.ProviderKind("parrot", lambda s, _r: ParrotProvider(s))  # type: ignore[arg-type,return-value]
    monkeypatch.setitem(provider_kinds.MODEL_PROVIDERS, "parrot", entry)
    endpoint = EndpointSettings.model_construct(provider="parrot", model="p")  # type: ignore[arg-type]
    made = endpoint_provider(endpoint, Redactor())
    assert isinstance(made, ParrotProvider) and made.settings.model == "p"


def test_a_new_intake_type_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    kind = intake_config.IntakeKind(
        "statuscake",
        "StatusCake",
        intake_config.compile_jmespath,
        {"kind": "'site_down'", "target": "url", "severity": "'critical'", "message": "reason"},
        alerts=False,
        episodes=False,
    )
    monkeypatch.setitem(intake_config.INTAKE_KINDS, "statuscake", kind)
    source = IntakeSource.model_construct(id="sc", type="statuscake", token=None)  # type: ignore[arg-type]
    for name in ("kind", "target", "severity", "message", "status", "dedup_key"):
        source.__dict__.setdefault(name, None)
    [sig] = Mapper(source).signals({"url": "https://shop.example", "reason": "timeout"})
    assert (sig.kind, sig.target, sig.message) == ("site_down", "https://shop.example", "timeout")


class Wave:
    name = "wave.hello"
    description = "says hello"
    params: Sequence[str] = ("who",)

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        return ActionResult(True, f"hello {args['who']}")


def test_a_new_action_family_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    family = action_kinds.ActionFamily("wave", lambda: [Wave()])
    monkeypatch.setitem(action_kinds.ACTION_FAMILIES, "wave", family)
    registry = ActionRegistry()
    assert registry.looks_like_action("wave.hello api")
    action, args = registry.parse("wave.hello api")
    assert action.name == "wave.hello" and args == {"who": "api"}


class EchoChannel:
    """A channel that only remembers what it was built from."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass


class EchoSettings:
    configured = True
    chat_id = "echo-room"


def test_a_new_chat_channel_is_one_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plug = types.ModuleType("echochat.plug")
    plug.notifier = lambda settings, db, router: EchoChannel(settings)  # type: ignore[attr-defined]
    plug.runner = lambda settings, db, runtime: EchoChannel(settings)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "echochat.plug", plug)
    entry = channel_kinds.ChannelKind(EchoSettings, "echochat")  # type: ignore[arg-type]
    monkeypatch.setitem(channel_kinds.CHANNELS, "echo", entry)
    settings = Settings(data_dir=tmp_path)
    settings.__dict__["echo"] = EchoSettings()
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    try:
        notifier = build_notifier(settings, db)
        [runner] = build_runners(settings, db)
    finally:
        db.dispose()
    assert isinstance(notifier, EchoChannel) and isinstance(runner, EchoChannel)
