"""``guard check-config`` says before an incident which probe would be refused: a playbook's
diagnostic probe to a host or port ``probes.allow`` does not name, a connection secret that is
not set; a granted probe and a templated one (known only when the incident opens) pass."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import GuardHome

pytestmark = pytest.mark.unit


def test_check_config_warns_of_probes_that_would_be_refused(
    home: GuardHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CACHE_URL", "redis://:pw-never-shown@cache.internal:6380/0")
    monkeypatch.delenv("ORDERS_DB_URL", raising=False)
    book = {
        "name": "shop",
        "monitors": [{"id": "web", "type": "http", "url": "http://api.internal:8080/health"}],
        "diagnostics": [
            {"action": "probe.http", "args": {"url": "http://api.internal:8080/debug"}},
            {"action": "probe.tcp", "args": {"target": "db.internal:5432"}},
            {"action": "probe.tls", "args": {"target": "api.internal"}},
            {"action": "probe.redis", "args": {"secret": "CACHE_URL"}},
            {"action": "probe.dns", "args": {"name": "{{ incident.target }}"}},
        ],
    }
    (home.playbooks / "shop.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
    home.write_config(
        {
            "probes": {
                "allow": [
                    {"host": "api.internal", "ports": [8080]},
                    {"host": "cache.internal", "ports": [6379]},
                ],
                "secrets": ["ORDERS_DB_URL", "CACHE_URL"],
            }
        }
    )
    done = home.cli("check-config")
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert warned == [
        "warning: probes.secrets ORDERS_DB_URL is not set in Guard's environment: a probe "
        "using it is refused",
        "warning: playbook shop diagnostics[1]: probe.tcp refused: db.internal is not in "
        "probes.allow; add {host: db.internal, ports: [5432]} to the probes: section of "
        "guard.yaml to let probes reach it",
        "warning: playbook shop diagnostics[2]: probe.tls refused: port 443 of api.internal is "
        "not in probes.allow (allowed: 8080); add it to that host's ports in guard.yaml",
        "warning: playbook shop diagnostics[3]: probe.redis refused: port 6380 of "
        "cache.internal is not in probes.allow (allowed: 6379); add it to that host's ports "
        "in guard.yaml",
    ], done.stderr
    assert "pw-never-shown" not in done.stdout + done.stderr
    assert done.stdout.startswith("config ok: 1 playbook(s), 1 monitor(s)")
