"""``deploy/compose.ha.yaml``: two Guard replicas on one Postgres, validated by Docker Compose."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.conftest import REPO
from tests.deploy.test_compose import compose_command


def test_two_replicas_share_one_postgres_and_talk_to_the_proxy_only(tmp_path: Path) -> None:
    work = tmp_path / "deploy"
    shutil.copytree(
        REPO / "deploy", work, ignore=shutil.ignore_patterns("wheelhouse", "kubernetes")
    )
    shutil.copy(work / "guard.env.example", work / "guard.env")
    shutil.copy(work / "ha.env.example", work / "ha.env")
    (tmp_path / "playbooks").mkdir()
    proc = subprocess.run(
        [*compose_command(), "-p", "guard", "-f", str(work / "compose.ha.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    replicas = [services["guard-a"], services["guard-b"]]
    urls = {r["environment"]["GUARD_DATABASE_URL"] for r in replicas}
    assert len(urls) == 1 and urls.pop().startswith("postgresql+psycopg://guard:")
    assert {r["environment"]["GUARD_HA__REPLICA_ID"] for r in replicas} == {"guard-a", "guard-b"}
    published = [p for r in replicas for p in r["ports"]]
    assert len(published) == len(set(published)) == 2  # each replica its own /readyz
    for r in replicas:
        assert r["restart"] == "unless-stopped"  # a deposed leader exits 3 and comes back
        assert r["environment"]["DOCKER_HOST"] == "tcp://socket-proxy:2375"
        assert r["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert not any("docker.sock" in str(v) for v in r["volumes"])
        assert any(str(v).startswith("guard-skills:/data/skills") for v in r["volumes"])
    assert "ports" not in services["postgres"] and "ports" not in services["socket-proxy"]
