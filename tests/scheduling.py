"""The parallel run's order: longest first, so no worker starts a five-minute test last.

``scripts/test`` runs the suite with ``--dist loadgroup --no-loadscope-reorder``: each free
worker takes the next test in collection order. ``longest_first`` sorts that order by the
durations a CI run measured (``tests/durations.txt``, rewritten by ``scripts/durations``); a
test not listed counts as quick and keeps its place among the quick ones. A module whose
tests share a module- or class-scoped fixture (a PostgreSQL, a stack of containers) is one
``xdist_group``: its tests run together on one worker, set up once, placed by their sum.

``GUARD_TEST_CPU=FILE`` appends each test's CPU seconds (Guard's and its processes') and wall
seconds to FILE: where a loaded machine's cores go.
"""

from __future__ import annotations

import resource
from collections.abc import Iterable
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.txt")
SHARED_SCOPES = frozenset({"module", "class"})


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


def shares_a_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture set up once for its module or class."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values() if defs)


def unit_of(item: pytest.Item) -> str:
    """The work unit ``item`` is scheduled in: its module if it shares a fixture, else itself."""
    return item.nodeid.split("::")[0] if shares_a_fixture(item) else item.nodeid


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Reorder ``items`` in place: work units by their measured seconds, longest first (a
    unit's tests stay together, in their order); mark the shared units as ``xdist_group``."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(unit_of(item), []).append(item)
    for name, members in units.items():
        if len(members) > 1 or name != members[0].nodeid:
            for item in members:
                item.add_marker(pytest.mark.xdist_group(name))

    def cost(unit: Iterable[pytest.Item]) -> float:
        return sum(seconds.get(item.nodeid, 0.0) for item in unit)

    ordered = sorted(units.values(), key=cost, reverse=True)  # stable: quick ones keep order
    items[:] = [item for unit in ordered for item in unit]


def cpu_seconds() -> float:
    """CPU time of this process and of its children that ended (a test's guard processes)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
