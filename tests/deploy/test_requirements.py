"""deploy/requirements.py: the image's dependency layer installs exactly pyproject's list."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.conftest import REPO

SCRIPT = REPO / "deploy" / "requirements.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=30
    )


def test_it_prints_the_dependencies_and_the_extras_asked_for_each_once() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    printed = _run(str(REPO / "pyproject.toml"), "postgres").stdout.splitlines()
    expected = list(
        dict.fromkeys(project["dependencies"] + project["optional-dependencies"]["postgres"])
    )
    assert printed == expected
    assert not any(line.startswith(("pytest", "ruff")) for line in printed)  # not the dev tools


def test_an_unknown_extra_is_named() -> None:
    proc = _run(str(REPO / "pyproject.toml"), "postgress")
    assert proc.returncode != 0 and "no optional dependencies named 'postgress'" in proc.stderr
