"""Rules of the code base that a reviewer would otherwise have to remember (issue 14)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit

# Third-party internals Guard reads on purpose, each in one place with a fallback or a test:
THIRD_PARTY_INTERNALS = {
    ("guard/monitors/matcher.py", "_parser"),  # re's parser: can a rule match zero characters?
    ("guard/util/saferegex.py", "_Anchor"),  # google-re2's low-level match: several times faster
    ("guard/util/saferegex.py", "_regexp"),
    ("guard/redact/engine.py", "_Anchor"),  # the same low-level match, for the spans of groups
    ("guard/redact/engine.py", "_regexp"),
    ("guard/domain/fingerprint.py", "_Anchor"),  # the same low-level match, to skip a mask's pass
    ("guard/domain/fingerprint.py", "_regexp"),
    ("guard/app/stalls.py", "_current_frames"),  # sys: the only way to see another thread's stack
}


def private_reads(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of each ``x._name`` where ``x`` is not ``self``/``cls``, and of each
    ``from guard... import _name``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append((node.lineno, node.attr))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("guard"):
            found += [
                (node.lineno, a.name)
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return found


def test_no_module_reads_another_objects_private_members() -> None:
    offences = []
    for path in sorted((REPO / "guard").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        offences += [
            f"{rel}:{line}: .{name}"
            for line, name in private_reads(path)
            if (rel, name) not in THIRD_PARTY_INTERNALS
        ]
    assert offences == []


def test_the_checker_finds_a_private_read(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        "def f(agent):\n    agent._move(1)\n    self._ok = 1\nfrom guard.x import _hidden\n"
    )
    assert sorted(private_reads(sample)) == [(2, "_move"), (4, "_hidden")]


@pytest.mark.skipif(
    shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
    reason="import-linter is not installed (pip install -e '.[dev]')",
)
def test_the_layer_contract_holds_and_nothing_imports_in_a_cycle() -> None:
    exe = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(exe), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 kept, 0 broken" in done.stdout


def test_the_root_of_the_package_holds_no_module() -> None:
    """Every module lives in the package of its layer (issue 41): ``ls guard/*.py``."""
    assert sorted(p.name for p in (REPO / "guard").glob("*.py")) == ["__init__.py"]


def test_no_class_inherits_another_to_live_in_another_file() -> None:
    """The agent's parts are given, not inherited (``guard.app.compose``), and no base class
    leaves a method to its subclass with ``NotImplementedError`` (a port is a Protocol, an
    abstract base says so with ``abstractmethod``)."""
    from guard.agent.loop import Agent
    from guard.agent.orchestration import IncidentHandler
    from guard.agent.recovery import Recovery
    from guard.notify.outbox.worker import OutboxWorker

    for cls in (Agent, IncidentHandler, Recovery, OutboxWorker):
        assert cls.__bases__ == (object,), cls
    raising = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in sorted((REPO / "guard").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Name | ast.Call)
        and "NotImplementedError" in ast.unparse(node.exc)
    ]
    assert raising == []
