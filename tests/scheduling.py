"""The parallel run's order: the longest modules first, so no worker starts a five-minute test
last.

``scripts/test`` runs the suite with ``--dist loadscope --no-loadscope-reorder``: a module is one
unit (its module-scoped fixtures, a PostgreSQL or a stack of containers, are set up once), and
each free worker takes the next module in collection order. ``longest_first`` sorts the modules
by the durations a CI run measured (``tests/durations.txt``, rewritten by ``scripts/durations``);
a test not listed counts as quick, and quick modules keep their order.

``GUARD_TEST_CPU=FILE`` appends each test's CPU seconds (its own and its processes') and wall
seconds to FILE: where a loaded machine's cores go.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.txt")


def measured(path: Path = DURATIONS) -> dict[str, float]:
    """Test id -> seconds, from ``SECONDS TEST_ID`` lines (``#`` starts a comment)."""
    found: dict[str, float] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, test_id = line.split(maxsplit=1)
            found[test_id] = float(seconds)
    return found


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Reorder ``items`` in place: modules by their tests' measured seconds, longest first (a
    module's tests keep their order)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)

    def cost(tests: list[pytest.Item]) -> float:
        return sum(seconds.get(item.nodeid, 0.0) for item in tests)

    ordered = sorted(modules.values(), key=cost, reverse=True)  # stable: quick ones keep order
    items[:] = [item for tests in ordered for item in tests]


def cpu_seconds() -> float:
    """CPU time of this process and of its children that ended (a test's guard processes)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
