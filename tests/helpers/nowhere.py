"""Railway-like surroundings for a test: no Docker engine and no cluster reachable."""

from __future__ import annotations

from pathlib import Path

import pytest

NOWHERE = "unix:///nonexistent/docker.sock"  # DOCKER_HOST naming nothing


def no_engine_no_cluster(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """``DOCKER_HOST`` names nothing and no kubeconfig or in-cluster credentials exist."""
    monkeypatch.setenv("DOCKER_HOST", NOWHERE)
    monkeypatch.setenv("KUBECONFIG", str(root / "no-kubeconfig"))
    for name in ("KUBERNETES_SERVICE_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
