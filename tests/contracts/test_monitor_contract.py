"""The Monitor port's contract, run against every kind in ``guard.monitors.MONITOR_KINDS``.

Each kind builds from a minimal playbook entry and exposes the port; against a cheap local rig
(a file, a local HTTP service, the real Docker engine, the local Kubernetes and Railway API
servers, a real journal) a failure gives a firing signal of the declared shape; the incident
it opens gets the kind's recent lines (or the tools' "no log source" answer); verification
fails while the target fails and passes once it is healthy. A kind added to the table without a
rig here fails this suite: add ``rig_<type>`` below."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from guard.actions import ActionContext, ActionRegistry
from guard.agent.steps import StepOutcome
from guard.agent.templating import incident_context
from guard.agent.tools import Toolbox
from guard.agent.verify import Verifier
from guard.config import Settings
from guard.domain.records import Observation, Severity
from guard.monitors import MONITOR_KINDS, BaseliningMonitor, Monitor, build_monitor
from guard.playbooks.models import Playbook, monitor_types
from guard.skills.model import VerifySpec
from guard.store.models import Incident
from guard.store.state import get_state, put_state
from guard.triage.engine import Triage
from tests.conftest import GuardHome
from tests.fakes.kube import KubeServer
from tests.fakes.railway import RailwayServer

KINDS = list(MONITOR_KINDS)
LOG_RULE = [{"kind": "boom", "pattern": "BOOM (?P<n>\\d+)", "group_by": ["n"]}]
MINIMAL: dict[str, dict[str, Any]] = {
    "logfile": {"path": "/var/log/app.log", "rules": LOG_RULE},
    "http": {"url": "http://127.0.0.1:9/healthz"},
    "docker": {"selector": {"label": "app=api"}},
    "railway": {"service": "api"},
    "kubernetes": {},
    "journald": {"rules": LOG_RULE},
    "host": {"host": "web1"},
    "resources": {"host": "local", "memory": {"above": "99%"}},
    "tls": {"host": "127.0.0.1"},
}
MARKS = {
    "docker": [pytest.mark.docker],
    "host": [pytest.mark.docker],
    "resources": [pytest.mark.docker],
}


def kinds() -> list[Any]:
    return [pytest.param(name, marks=MARKS.get(name, []), id=name) for name in KINDS]


@dataclass
class Rig:
    """A kind's target in a test: its playbook entry, and how to break and heal it."""

    spec: dict[str, Any]
    settings: Settings
    fail: Callable[[], Awaitable[None]]  # the target fails (a log kind: one more bad line)
    heal: Callable[[], Awaitable[None]]  # healthy again (a log kind: nothing to do)
    signal: str  # the kind of the firing signal a failure gives
    target: str
    line: str | None  # a line the target wrote that its recent lines hold (None: it has none)


@pytest.mark.unit
def test_the_table_and_the_playbook_union_name_the_same_kinds() -> None:
    assert monitor_types() == tuple(KINDS)
    assert all(MONITOR_KINDS[name].type == name for name in KINDS)


@pytest.mark.unit
@pytest.mark.parametrize("name", KINDS)
async def test_builds_from_a_minimal_entry_and_exposes_the_port(name: str) -> None:
    kind = MONITOR_KINDS[name]
    assert name in MINIMAL, f"no minimal entry for monitor kind {name!r}: add one to MINIMAL"
    entry = {"id": f"c-{name}", "type": name, "jitter": "2s", **MINIMAL[name]}
    [spec] = Playbook.model_validate({"name": "contract", "monitors": [entry]}).monitors
    assert type(spec) is kind.spec
    monitor = build_monitor(spec, settings=Settings())
    assert isinstance(monitor, Monitor)
    assert (monitor.id, monitor.type, monitor.jitter) == (f"c-{name}", name, 2.0)
    assert monitor.interval == spec.every > 0  # type: ignore[attr-defined]
    await monitor.close()  # nothing observed yet: nothing to release, no error


def settle(obs: Observation) -> Observation:
    """The observation as stored: its state must survive JSON (it is persisted)."""
    return Observation(obs.signals, json.loads(json.dumps(obs.state)), obs.monitor_id)


async def check_until(
    monitor: Monitor, state: dict[str, Any], done: Callable[[Observation], bool]
) -> Observation:
    deadline = time.monotonic() + 60
    while True:
        obs = settle(await monitor.check(state))
        if done(obs) or time.monotonic() > deadline:
            return obs
        state = obs.state
        await asyncio.sleep(0.1)


class ActionRunner:
    """The part of ``StepRunner`` the tools use: run a read-only action for the incident."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def action(
        self, name: str, args: dict[str, Any], incident: Any, *, keep: int = 500
    ) -> StepOutcome:
        ctx = ActionContext(self.settings, incident_context(incident)["incident"])
        result = await ActionRegistry().get(name).run(args, ctx)
        return StepOutcome(result.ok, result.message.strip()[-keep:] or name, result.details)


def opened(home: GuardHome, settings: Settings, obs: Observation, monitor_id: str) -> Incident:
    """The incident triage opens for ``obs`` (its monitor state stored with it)."""
    db = home.database()
    Triage(db, settings.triage).process([Observation(obs.signals, obs.state, monitor_id)])
    with db.session() as session:
        [inc] = session.exec(select(Incident)).all()
        return inc


@pytest.mark.parametrize("name", kinds())
async def test_a_failure_is_signalled_investigated_and_verified(
    name: str, home: GuardHome, request: pytest.FixtureRequest
) -> None:
    kind = MONITOR_KINDS[name]
    try:
        rig: Rig = request.getfixturevalue(f"rig_{name}")
    except pytest.FixtureLookupError:
        pytest.fail(f"no contract rig for monitor kind {name!r}: add a rig_{name} fixture")
    entry = {"id": f"c-{name}", "type": name, "every": "1h", **rig.spec}
    [spec] = Playbook.model_validate({"name": "contract", "monitors": [entry]}).monitors
    monitor = build_monitor(spec, settings=rig.settings)
    try:
        state: dict[str, Any] = {}
        if isinstance(monitor, BaseliningMonitor):
            state = monitor.baseline({}) or {}
        state = settle(await monitor.check(state)).state  # healthy: where "now" is
        await rig.fail()

        def fired(obs: Observation) -> bool:
            return any(s.status == "firing" and s.kind == rig.signal for s in obs.signals)

        obs = await check_until(monitor, state, fired)
        assert fired(obs), [(s.kind, s.status, s.target) for s in obs.signals]
        for s in obs.signals:  # the declared shape
            assert (s.monitor_id, s.source) == (spec.id, name)
            assert s.status in ("firing", "ok") and isinstance(s.severity, Severity)
            assert s.kind and s.target and s.message and s.count >= 1
            json.dumps(s.details, default=str)
        [sig] = [s for s in obs.signals if s.status == "firing" and s.kind == rig.signal]
        assert sig.target == rig.target
    finally:
        await monitor.close()

    assert (kind.recent_lines is None) == (rig.line is None), "the kind gives recent lines"
    inc = opened(home, rig.settings, obs, spec.id)
    assert (inc.source, inc.target, inc.kind) == (name, rig.target, rig.signal)
    runner = ActionRunner(rig.settings)
    box = Toolbox(inc, runner, None, None, None, None, timeout=10)  # type: ignore[arg-type]
    text = await box.call("recent_logs", {"lines": 20})
    if kind.recent_lines is None:
        assert text.startswith(f"no log source for a {name} incident")
    else:
        assert rig.line is not None and rig.line in text, text

    verifier = Verifier(home.database(), {spec.id: spec}, rig.settings)
    await rig.fail()  # still failing (a log kind: a new bad line)
    failing = await verifier.verify(inc, VerifySpec(timeout=1, interval=0.1, quiet=0.2))
    assert not failing.passed and failing.reason.startswith("still failing after 1s"), failing
    running = build_monitor(spec, settings=rig.settings)  # the running monitor reads on
    try:
        with home.database().session() as session:
            seen = settle(await running.check(get_state(session, f"monitor:{spec.id}")))
            put_state(session, f"monitor:{spec.id}", seen.state)
    finally:
        await running.close()
    await rig.heal()
    healed = await verifier.verify(inc, VerifySpec(timeout=60, interval=0.1, quiet=0.2))
    assert healed.passed, healed


# -- rigs: one per kind ---------------------------------------------------------------------


@pytest.fixture
def rig_logfile(home: GuardHome, tmp_path: Path) -> Rig:
    log = tmp_path / "app.log"
    log.write_text("starting\n")
    written = iter(range(1, 100))

    async def fail() -> None:
        with log.open("a") as f:
            f.write(f"BOOM {next(written)} the cache is gone\n")

    async def heal() -> None:
        return None

    spec = {"path": str(log), "rules": LOG_RULE, "multiline": "none"}
    return Rig(spec, home.settings(), fail, heal, "boom", str(log), "BOOM 1 the cache is gone")


@pytest.fixture
def rig_http(home: GuardHome, service: Any) -> Rig:
    async def fail() -> None:
        service.healthy = False

    async def heal() -> None:
        service.healthy = True

    url = service.base + "/healthz"
    return Rig({"url": url, "timeout": "5s"}, home.settings(), fail, heal, "http_status", url, None)


@pytest.fixture
def rig_docker(home: GuardHome, containers: Any) -> Iterator[Rig]:
    from tests.monitors.test_docker_monitor import watch_label

    label, labels = watch_label()
    box = containers.run("contract", "echo hello from the contract; sleep 300", labels=labels)

    async def fail() -> None:
        def kill() -> None:
            box.reload()
            if box.status == "running":
                box.kill()
                box.wait(timeout=60)

        await asyncio.to_thread(kill)

    async def heal() -> None:
        await asyncio.to_thread(box.start)

    spec = {"selector": {"label": label}, "events": False}
    yield Rig(spec, home.settings(), fail, heal, "container_exited", box.name, "hello from")


@pytest.fixture
def railway() -> Iterator[RailwayServer]:
    from tests.fakes.railway import serve_railway

    yield from serve_railway()


@pytest.fixture
def rig_railway(home: GuardHome, railway: RailwayServer) -> Rig:
    from tests.fakes.railway import railway_config

    railway.state.deploy(status="SUCCESS")
    home.write_config({"railway": railway_config(railway)})

    async def fail() -> None:
        if railway.state.deployments[-1]["status"] != "CRASHED":
            railway.state.deploy(status="CRASHED")

    async def heal() -> None:
        railway.state.deploy(status="SUCCESS")

    spec = {"service": "api", "environment": "production"}
    signal = "railway_deployment_crashed"
    return Rig(spec, home.settings(), fail, heal, signal, "production/api", None)


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    from tests.fakes.kube import serve_kube

    yield from serve_kube()


@pytest.fixture
def rig_kubernetes(home: GuardHome, kube: KubeServer) -> Rig:
    from tests.fakes.kube import pod
    from tests.fakes.kube_logs import crash, start_again, started, write_log

    name = "api-7d9f8b6c5d-x2k4p"
    kube.state.put_pod(pod(name, statuses=[started("app")]))
    write_log(kube.state, "shop", name, "app", "INFO ready", "ERROR the pool is exhausted")
    home.write_config({"kubernetes": {"kubeconfig": str(kube.kubeconfig(home.root)), "timeout": 5}})

    async def fail() -> None:
        [app] = kube.state.pods[("shop", name)]["status"]["containerStatuses"]
        if "running" in app["state"]:
            crash(kube.state, "shop", name, "app")

    async def heal() -> None:
        start_again(kube.state, "shop", name, "app")

    spec = {"namespace": "shop", "selector": "app=api", "events": False}
    signal = "k8s_crash_loop_back_off"
    return Rig(spec, home.settings(), fail, heal, signal, "shop/api", "the pool is exhausted")


@pytest.fixture
def rig_journald(home: GuardHome, tmp_path: Path) -> Rig:
    from tests.helpers.journal import Journal

    journal = Journal(tmp_path / "journal")
    journal.write([journal.entry("pay starting", unit="pay.service")])
    written = iter(range(1, 100))

    async def fail() -> None:
        line = f"BOOM {next(written)} the card service is gone"
        entry = journal.entry(line, unit="pay.service", priority=3)
        await asyncio.to_thread(journal.write, [entry])

    async def heal() -> None:
        return None

    spec = {"directory": str(journal.folder), "units": ["pay.service"], "rules": LOG_RULE}
    spec["multiline"] = "none"
    line = "BOOM 1 the card service is gone"
    return Rig(spec, home.settings(), fail, heal, "boom", "pay.service", line)


@pytest.fixture
def rig_host(home: GuardHome, docker_client: Any) -> Iterator[Rig]:
    """A real OpenSSH host set up from `guard host setup`: failing is a changed host key."""
    from tests.helpers.hosts import HostBox, configure

    host = HostBox(docker_client, f"guard-test-{os.getpid()}-rig-host")
    try:
        configure(home, host)
        host.sh("mkdir -p /root/keys && cp -p /etc/ssh/ssh_host_* /root/keys/")

        async def fail() -> None:
            await asyncio.to_thread(
                host.sh, "rm /etc/ssh/ssh_host_* && ssh-keygen -A && /etc/init.d/ssh restart"
            )

        async def heal() -> None:
            await asyncio.to_thread(
                host.sh, "cp -p /root/keys/* /etc/ssh/ && /etc/init.d/ssh restart"
            )

        yield Rig({"host": "web1"}, home.settings(), fail, heal, "host_key_changed", "web1", None)
    finally:
        host.remove()


@pytest.fixture
def rig_resources(home: GuardHome, containers: Any) -> Rig:
    """A container under a 32 MiB limit; failing: 28 MiB written to its /dev/shm (a tmpfs
    charged to its memory), healed: removed."""
    from tests.monitors.test_docker_monitor import watch_label

    label, labels = watch_label()
    box = containers.run("usage", "sleep 300", labels=labels, mem_limit="32m")

    def shell(command: str) -> None:
        code, output = box.exec_run(["sh", "-c", command])
        assert code == 0, output

    async def fail() -> None:
        await asyncio.to_thread(shell, "dd if=/dev/zero of=/dev/shm/fill bs=1M count=28")

    async def heal() -> None:
        await asyncio.to_thread(shell, "rm -f /dev/shm/fill")

    spec = {"selector": {"label": label}, "memory": {"above": "50%"}}
    return Rig(spec, home.settings(), fail, heal, "memory_high", box.name, None)


@pytest.fixture
def rig_tls(home: GuardHome, tmp_path: Path) -> Iterator[Rig]:
    """A TLS server on 127.0.0.1; failing: it serves a certificate that expires in 5 days."""
    from tests.helpers.tls import Certificates, tls_server

    certs = Certificates(tmp_path / "certs")
    fresh, expiring = certs.leaf("shop.test", days=90), certs.leaf("shop.test", days=5)
    with tls_server(*fresh) as server:

        async def fail() -> None:
            server.serve(*expiring)

        async def heal() -> None:
            server.serve(*fresh)

        spec = {"host": "127.0.0.1", "port": server.port, "server_name": "shop.test"}
        spec |= {"ca_file": str(certs.ca), "expires_within": "14d"}
        target = f"shop.test:{server.port}"
        yield Rig(spec, home.settings(), fail, heal, "tls_expiring", target, None)
