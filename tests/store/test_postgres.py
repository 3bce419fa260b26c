"""The store on a real PostgreSQL server (started by the test), through a database URL."""

from __future__ import annotations


def test_incidents_and_audit_on_postgres(home, postgres_url, tmp_path):
    import json

    log = tmp_path / "app.log"
    log.write_text("")
    home.write_config({"database_url": postgres_url})
    home.playbook(
        "app",
        [
            {
                "id": "app-log",
                "type": "logfile",
                "path": str(log),
                "rules": [{"kind": "app_error", "pattern": "ERROR"}],
            }
        ],
    )
    home.cli("run", "--once")
    log.write_text("".join(f"ERROR request {i} failed after {i}ms\n" for i in range(500)))
    home.cli("run", "--once")
    [inc] = json.loads(home.cli("incidents", "list", "--json").stdout)
    assert inc["count"] == 500 and inc["opened_at"].endswith("+00:00")
    shown = json.loads(home.cli("incidents", "show", str(inc["id"]), "--json").stdout)
    assert shown["timeline"][0]["type"] == "opened"
    assert "audit chain ok" in home.cli("audit", "verify").stdout
