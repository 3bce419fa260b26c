"""``bench.crash`` after its split into focused modules: the same command line, the same
scenarios and cases, the matrix written between its markers, and no module over 450 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import crash

BENCH = Path(crash.__file__).parent


@pytest.mark.unit
def test_scenarios_lists_every_scenario_and_cases_pick_by_name_and_point() -> None:
    assert list(crash.scenarios()) == [
        *("http-skill", "docker-exit", "telegram-fix", "logfile", "storm", "flap", "report"),
        *("correlate", "paging", "escalation", "hold", "demotion"),
        *("email", "slack", "matrix", "console"),
    ]
    picked = [(s.name, p) for s, p in crash.cases(["storm", "http-skill:step"])]
    assert picked == [
        ("http-skill", "step.started"),
        ("http-skill", "step.ended"),
        *[("storm", p) for p in crash.scenarios()["storm"].points],
    ]


@pytest.mark.unit
def test_the_matrix_is_written_between_its_markers_and_replaced_there(tmp_path: Path) -> None:
    red = crash.Result("flap", "triage.flap_reopen", True, {"telegram": (False, "posted twice")})
    green = crash.Result("report", "report.sending", True, {"audit": (True, "ok")})
    doc = tmp_path / "RELIABILITY.md"
    doc.write_text("# Reliability\n\nafter\n")
    listed = crash.scenarios().values()
    crash.write_doc(doc, "sqlite", crash.matrix([red]), [red], ["--only", "flap"], listed)
    crash.write_doc(doc, "sqlite", crash.matrix([green]), [green], [], listed)
    text = doc.read_text()
    assert text.startswith("# Reliability\n\nafter\n\n<!-- crash matrix: sqlite -->\n")
    assert text.count("<!-- crash matrix: sqlite -->") == 2  # replaced, not appended again
    assert "| report | `report.sending` | ✅ |" in text and "| flap |" not in text
    assert "1 cases, 1 distinct kill points, 1 green." in text and "No red cell." in text
    assert "- **escalation**: " in text  # every scenario described
    assert crash.failures([red]) == ["- flap at `triage.flap_reopen`: **telegram**: posted twice"]


@pytest.mark.unit
def test_no_crash_module_is_over_450_lines() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in BENCH.glob("crash*.py")}
    assert {"crash.py", "crash_run.py", "crash_scenarios.py", "crash_report.py"} <= set(sizes)
    assert max(sizes.values()) <= 450, sizes


def test_the_command_line_is_unchanged() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.crash", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert out.startswith("usage: python -m bench.crash [-h] [--only ONLY] [--write WRITE]")
    assert "{sqlite,postgres}" in out and "The crash matrix: SIGKILL a real" in out
