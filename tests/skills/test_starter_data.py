"""The data-and-storage starter skills (docs/STARTER.md): each loads from the checkout's
skills/, asks a human first, and is the one skill recalled for its fault in the words the real
daemon uses (PostgreSQL 15's FATAL and lock-wait lines, Redis's OOM error), or the kind its
monitor gives (``disk_high``, ``tls_expiring``); each has its section in docs/STARTER.md."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from guard.skills.library import SkillLibrary
from tests.helpers.agent import REPO

pytestmark = pytest.mark.unit

FAULTS: dict[str, dict[str, Any]] = {
    "disk-nearly-full": {
        "source": "resources",
        "kind": "disk_high",
        "message": "/data 58 MiB of 64 MiB (91 %), rising 1.8 MB/s: full in 3 s",
    },
    "postgres-out-of-connections": {
        "source": "docker",
        "kind": "pg_connections",
        "message": "FATAL:  remaining connection slots are reserved for non-replication "
        "superuser connections",
    },
    "postgres-lock-waits": {
        "source": "docker",
        "kind": "pg_lock_wait",
        "message": "LOG:  process 271 still waiting for ShareLock on transaction 743 after "
        "200.113 ms",
    },
    "redis-at-maxmemory": {
        "source": "docker",
        "kind": "redis_oom",
        "message": "(error) OOM command not allowed when used memory > 'maxmemory'.",
    },
    "tls-certificate-expiring": {
        "source": "tls",
        "kind": "tls_expiring",
        "message": "shop.example.com:443 certificate expires in 5 days",
    },
}


def incident(**fields: Any) -> SimpleNamespace:
    base = {"id": 1, "target": "db-1", "severity": "error", "monitor_id": "m", "count": 1}
    return SimpleNamespace(**base, details={}, title=fields["message"], **fields)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_each_data_starter_asks_first_and_is_recalled_for_its_fault(name: str) -> None:
    library = SkillLibrary(REPO / "skills")
    skill = library.get(name)
    assert skill is not None, f"skills/{name} is missing"
    assert (skill.spec.trust, skill.spec.origin) == ("approval", "builtin")
    assert skill.spec.diagnostics, "evidence before anyone is asked"
    assert skill.spec.limits.max_runs <= 2
    recalled = [c.skill.name for c in library.candidates(incident(**FAULTS[name]))]
    assert recalled == [name]
    other = incident(source="docker", kind="container_exited", message="exited with code 1")
    assert name not in [c.skill.name for c in library.candidates(other)]
    assert f"### {name}" in (REPO / "docs" / "STARTER.md").read_text()
