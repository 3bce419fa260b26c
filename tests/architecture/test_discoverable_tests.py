"""Every module's test can be found by its path (issue 41): a ``test_<module>.py`` (or
``test_<module>_<aspect>.py``) somewhere under ``tests/``, or the module names the test file
that covers it (a flow test, ``tests/flows/...``). The modules that predate the rule and have
neither are listed in ``untested_modules.txt``: the list may only shrink. A new module without
a discoverable test fails here; a listed module that gains one must leave the list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit

LISTED = Path(__file__).with_name("untested_modules.txt")
NAMED = re.compile(r"tests/[\w/]+\.py")


def modules() -> list[Path]:
    return [
        p
        for p in sorted((REPO / "guard").rglob("*.py"))
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    ]


def discoverable(module: Path, tests: set[str]) -> bool:
    """Whether ``module``'s test is found by its name, or named by the module."""
    stem = module.stem
    if any(t == f"test_{stem}" or t.startswith(f"test_{stem}_") for t in tests):
        return True
    return any((REPO / ref).is_file() for ref in NAMED.findall(module.read_text()))


def undiscoverable() -> set[str]:
    tests = {p.stem for p in (REPO / "tests").rglob("test_*.py")}
    return {str(m.relative_to(REPO)) for m in modules() if not discoverable(m, tests)}


def listed() -> set[str]:
    lines = LISTED.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_a_module_without_a_discoverable_test_is_one_that_predates_the_rule() -> None:
    new = sorted(undiscoverable() - listed())
    assert not new, (
        f"no test found for {new}: add tests/<package>/test_<module>.py, or name the test that "
        "covers the module in its docstring"
    )


def test_the_list_of_modules_without_one_only_shrinks() -> None:
    found = undiscoverable()
    stale = sorted(listed() - found)
    assert not stale, (
        f"these have a discoverable test now (or are gone): remove them from {LISTED.name}: {stale}"
    )


def test_the_checker_finds_a_test_by_name_or_by_mention(tmp_path: Path) -> None:
    module = tmp_path / "pacing.py"
    module.write_text('"""Pacing."""\n')
    assert discoverable(module, {"test_pacing"})
    assert discoverable(module, {"test_pacing_under_load"})
    assert not discoverable(module, {"test_pacings", "test_other"})
    module.write_text('"""Pacing; tested by tests/architecture/test_code_rules.py."""\n')
    assert discoverable(module, set())
