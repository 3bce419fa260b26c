"""``.railway/railway.ts`` type-checks against the real npm ``railway`` package (v3.11).

Skipped when npm is absent. The first run installs ``.railway/node_modules`` (``npm ci``: the
lockfile's exact versions, from the npm registry).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

IAC = REPO / ".railway"


@pytest.fixture(scope="module")
def tsc() -> list[str]:
    if shutil.which("npm") is None or shutil.which("npx") is None:
        pytest.skip(
            "npm is not installed: apt-get install npm (Node >= 20) to type-check "
            ".railway/railway.ts"
        )
    if not (IAC / "node_modules" / "railway").is_dir():
        proc = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=IAC,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
    return ["npx", "--no-install", "tsc", "--noEmit"]


@pytest.mark.timeout(300)
def test_railway_ts_type_checks(tsc: list[str]) -> None:
    proc = subprocess.run(tsc, cwd=IAC, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.timeout(300)
def test_the_check_rejects_a_wrong_setting(tsc: list[str], tmp_path: Path) -> None:
    """The check has teeth: a restart policy Railway does not have fails it."""
    text = (IAC / "railway.ts").read_text()
    assert '"ON_FAILURE"' in text
    (tmp_path / "railway.ts").write_text(text.replace('"ON_FAILURE"', '"SOMETIMES"'))
    for name in ("tsconfig.json", "package.json"):
        shutil.copy(IAC / name, tmp_path / name)
    os.symlink(IAC / "node_modules", tmp_path / "node_modules")
    proc = subprocess.run(tsc, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert proc.returncode != 0
    assert "SOMETIMES" in proc.stdout


def test_railway_ts_declares_what_guard_needs() -> None:
    text = (IAC / "railway.ts").read_text()
    for needle in (
        'from "railway/iac"',
        'dockerfilePath: "deploy/Dockerfile"',
        'healthcheckPath: "/healthz"',
        '"/data": volume(',
        "preserve()",
    ):
        assert needle in text
    for line in text.splitlines():  # secrets come from the environment, never the file
        if any(s in line for s in ("TOKEN", "API_KEY", "CHAT_ID")):
            assert "preserve()" in line, line
