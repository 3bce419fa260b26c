"""Probes in a real `guard run` with no Docker engine reachable (``DOCKER_HOST`` points at
nothing, as on Railway): a playbook's probe diagnostic fills the evidence of a failing HTTP
check; a human's ``guard reply N -- probe.http URL`` runs, joins the evidence, and the incident
keeps waiting (nothing verified, nothing learned); a probe to a host ``probes.allow`` does not
name is refused with the setting to change; a playbook diagnostic that is not a probe does not
run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.conftest import GuardHome
from tests.helpers.agent import find, free_port, running_guard, show, wait_for
from tests.helpers.probes import fixed_site

pytestmark = pytest.mark.timeout(180)

TOKEN = "gh" + "p_" + "Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8"  # a GitHub token's shape


@pytest.fixture
def sick() -> Iterator[str]:
    routes = {
        "/health": (503, b"database unavailable"),
        "/debug": (200, f"pool exhausted; admin token={TOKEN}".encode()),
    }
    with fixed_site(routes) as url:
        yield url


def configure(home: GuardHome, base: str) -> None:
    port = int(base.rsplit(":", 1)[1])
    book: dict[str, Any] = {
        "name": "web",
        "monitors": [
            {"id": "web", "type": "http", "url": f"{base}/health", "every": "1s", "for": 1}
        ],
        "diagnostics": [
            {"action": "probe.http", "args": {"url": f"{base}/debug"}},
            {"action": "docker.restart", "args": {"container": "web"}},  # not read-only
        ],
    }
    (home.playbooks / "web.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
    home.write_config(
        {
            "http_port": free_port(),
            "agent": {"poll_interval": "200ms", "verify_timeout": "5s", "settle": "1s"},
            "probes": {"allow": [{"host": "127.0.0.1", "ports": [port]}], "timeout": "5s"},
        }
    )


def test_a_probe_reply_is_evidence_not_a_fix(
    home: GuardHome, sick: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{home.root}/no-engine.sock")
    configure(home, sick)
    home.cli("check-config")
    with running_guard(home):
        asked = wait_for(
            lambda: find(home, monitor_id="web", state="awaiting_human"), 60, "Guard to ask"
        )
        n = str(asked["id"])
        first = show(home, asked["id"])["details"]["evidence"]
        assert f"$ probe.http url={sick}/debug" in first or "probe.http" in first, first
        assert f"GET {sick}/debug -> 200 OK" in first, first
        assert TOKEN not in first and "token=[REDACTED" in first, first
        assert "(could not run: docker.restart is not read-only: a playbook's diagnostics" in first

        said = home.cli("reply", n, "--", "probe.http", f"{sick}/health").stdout
        assert f"GET {sick}/health -> 503 Service Unavailable in " in said, said
        assert f"incident #{n} still waits for a fix" in said, said

        refused = home.cli("reply", n, "--", "probe.tcp", "10.255.255.1:5432", check=False)
        out = refused.stdout + refused.stderr
        assert "10.255.255.1 is not in probes.allow" in out, out

        after = show(home, asked["id"])
    assert after["state"] == "awaiting_human"  # a probe cured nothing and ended nothing
    assert f"GET {sick}/health -> 503" in after["details"]["evidence"]
    assert "(by cli:" in after["details"]["evidence"]
    assert not after["details"].get("learned_skill")
    probed = [t for t in after["timeline"] if t["type"] == "probed"]
    assert len(probed) == 2, after["timeline"]
    assert not (home.root / "skills").exists() or not any((home.root / "skills").glob("learned-*"))
