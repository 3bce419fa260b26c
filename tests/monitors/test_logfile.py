"""The logfile monitor: positions, rotation, truncation, odd lines, and restart safety."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from guard.monitors.logfile import LogfileMonitor
from guard.playbooks.models import LogfileMonitorSpec

pytestmark = pytest.mark.unit


def monitor(path: Path, **kw: Any) -> LogfileMonitor:
    spec = LogfileMonitorSpec.model_validate(
        {
            "id": "log",
            "type": "logfile",
            "path": str(path),
            "rules": [{"kind": "boom", "pattern": "BOOM"}, {"kind": "err", "pattern": "ERROR"}],
            **kw,
        }
    )
    return LogfileMonitor(spec)


def counts(obs: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in obs.signals:
        out[s.kind] = out.get(s.kind, 0) + s.count
    return out


def append(path: Path, text: str | bytes) -> None:
    with open(path, "ab") as f:
        f.write(text.encode() if isinstance(text, str) else text)


def test_new_file_starts_at_the_end(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("BOOM old line\n")
    m = monitor(log)
    first = m.scan({})
    assert first.signals == [] and first.state["position"]["offset"] == log.stat().st_size
    append(log, "BOOM new\n")
    assert counts(m.scan(first.state)) == {"boom": 1}


def test_start_beginning_reads_existing_lines(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("BOOM 1\nBOOM 2\nfine\nERROR x\n")
    assert counts(monitor(log, start="beginning").scan({})) == {"boom": 2, "err": 1}


def test_first_matching_rule_wins_and_repeats_fold(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("")
    m = monitor(log)
    st = m.scan({}).state
    append(log, "".join(f"BOOM ERROR request {i} took {i * 3}ms\n" for i in range(500)))
    obs = m.scan(st)
    assert len(obs.signals) == 1 and obs.signals[0].kind == "boom" and obs.signals[0].count == 500


def test_partial_line_waits_for_its_newline(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("")
    m = monitor(log)
    st = m.scan({}).state
    append(log, "BOOM half")
    obs = m.scan(st)
    assert obs.signals == [] and obs.state["position"]["offset"] == 0
    append(log, " and the rest\n")
    obs = m.scan(obs.state)
    assert counts(obs) == {"boom": 1}
    assert obs.signals[0].message == "BOOM half and the rest"


def test_truncation_starts_over(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("x" * 1000 + "\n")
    m = monitor(log)
    st = m.scan({}).state
    log.write_text("BOOM after truncate\n")  # same inode, shorter
    assert counts(m.scan(st)) == {"boom": 1}


def test_rotation_loses_no_line_with_the_handle_held(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("")
    m = monitor(log)
    st = m.scan({}).state
    append(log, "BOOM before\n")
    st = m.scan(st).state
    append(log, "BOOM written just before rotation\n")
    os.rename(log, tmp_path / "a.log.1")
    log.write_text("BOOM in the new file\n")
    obs = m.scan(st)
    assert counts(obs) == {"boom": 2}
    append(log, "ERROR later\n")
    assert counts(m.scan(obs.state)) == {"err": 1}


def test_rotation_while_guard_was_down_finds_the_renamed_file(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("")
    st = monitor(log).scan({}).state
    append(log, "BOOM tail of old file\nBOOM no newline at the end")
    os.rename(log, tmp_path / "a.log-20261202")
    log.write_text("ERROR new file\n")
    obs = monitor(log).scan(st)  # a fresh monitor: Guard restarted
    assert counts(obs) == {"boom": 2, "err": 1}


def test_huge_binary_and_non_utf8_lines(tmp_path: Path):
    log = tmp_path / "a.log"
    log.write_text("")
    m = monitor(log, max_line_bytes=1024)
    st = m.scan({}).state
    append(log, b"BOOM " + b"\xff\xfe\x00" * 2_000_000 + b"\n")  # a 6 MB line of junk
    append(log, b"\x00\x01\x02 ERROR \xc3\x28 invalid utf-8\n")
    append(log, b"A" * 3_000_000)  # an endless line with no newline yet
    obs = m.scan(st)
    assert counts(obs) == {"boom": 1, "err": 1}
    assert all(len(s.message) <= 1024 for s in obs.signals)
    assert obs.state["position"]["offset"] == log.stat().st_size  # the endless line is skipped
    append(log, b"AAAA still the same line BOOM\nBOOM next line\n")
    assert counts(m.scan(obs.state)) == {"boom": 1}


def test_missing_file_is_a_monitor_error(tmp_path: Path):
    import pytest

    from guard.domain.exceptions import MonitorError

    with pytest.raises(MonitorError, match="does not exist"):
        monitor(tmp_path / "missing.log").scan({})


def test_baseline_fixes_the_end_when_guard_starts(tmp_path: Path):
    """Lines written between `guard run` starting and its first check are not skipped."""
    log = tmp_path / "a.log"
    log.write_text("BOOM before guard started\n")
    m = monitor(log)
    state = m.baseline({})
    assert state is not None and state["position"]["offset"] == log.stat().st_size
    append(log, "BOOM after start, before the first check\n")
    assert counts(m.scan(state)) == {"boom": 1}
    assert m.baseline(state) is None  # a known position is never moved
    assert monitor(log, start="beginning").baseline({}) is None


def test_a_file_missing_at_start_is_read_whole_when_it_appears(tmp_path: Path):
    log = tmp_path / "later.log"
    m = monitor(log)
    state = m.baseline({})
    assert state == {"position": None}
    log.write_text("BOOM first line the service ever wrote\nERROR second\n")
    obs = m.scan(state)
    assert counts(obs) == {"boom": 1, "err": 1}
    assert counts(m.scan(obs.state)) == {}


async def test_checks_started_together_read_their_files_in_one_worker_hand_off(tmp_path: Path):
    import asyncio

    from guard.monitors.logfile import READS

    paths = [tmp_path / f"app-{i}.log" for i in range(12)]
    for p in paths:
        p.write_text("")
    monitors = [monitor(p, multiline="none") for p in paths]
    states = [m.baseline({}) or {} for m in monitors]
    for i, p in enumerate(paths):
        append(p, f"ERROR in app {i}\n" * (i + 1))
    before = READS.handoffs
    seen = await asyncio.gather(*(m.check(s) for m, s in zip(monitors, states, strict=True)))
    assert READS.handoffs - before == 1  # twelve reads, one hand-off (was one each)
    assert [counts(o) for o in seen] == [{"err": i + 1} for i in range(12)]  # each its own file
    for m in monitors:
        await m.close()
