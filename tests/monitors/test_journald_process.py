"""journalctl as a process: one that ends is an error and reading goes on where it stopped;
one that cannot follow is run again, one gone silent is started again, each counting once; a
cursor it cannot seek to, journal files Guard may not read, a missing journalctl or directory
are named with what to fix. Real journal files; a wrapper around the real journalctl where it
must misbehave."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from guard.domain.records import Signal
from guard.monitors.journald import JournaldMonitor
from tests.helpers.journal import RULES, Journal, following, monitor, numbers, wrap
from tests.monitors.test_multiline import python_trace


def traced(tmp_path: Path) -> tuple[Journal, JournaldMonitor]:
    """A journal, and a monitor of ``ERROR n`` lines and Python tracebacks that waits as long
    as it takes for an event's end (``flush_after: 1h``), started at the journal's end."""
    journal = Journal(tmp_path / "journal")
    rules: list[dict[str, Any]] = [*RULES, {"kind": "app_error", "pattern": "ShopError"}]
    watcher = monitor(journal.folder, rules=rules, multiline={"flush_after": "1h"})
    watcher.baseline({})
    return journal, watcher


async def test_journalctl_ending_is_an_error_and_reading_goes_on_where_it_stopped(
    tmp_path, monkeypatch
):
    """As the runner does: a check while following is a health check; when journalctl ends,
    follow raises; a check meanwhile reads on; follow again starts after that."""
    from guard.domain.exceptions import MonitorError

    broken = tmp_path / "broken"  # while it exists, journalctl fails at once (a wrapper)
    wrap(tmp_path, monkeypatch, f"[ -e {broken} ] && echo 'journalctl: broken' >&2 && exit 1")
    journal = Journal(tmp_path / "journal")
    watcher = monitor(journal.folder, multiline="none")
    watcher.baseline({})
    seen: list[Signal] = []
    async with following(watcher) as run:
        journal.write([journal.entry("ERROR 1", unit="api.service")])
        await run.until(lambda: bool(run.signals()))
        assert (await watcher.check({})).signals == []  # following: only health
        broken.touch()
        for journalctl in list(watcher._procs):  # it ends (a crash, an OOM kill)
            journalctl.kill()
        assert run.task is not None
        with pytest.raises(MonitorError, match="journalctl exited with"):
            await asyncio.wait_for(asyncio.shield(run.task), 60)
        with pytest.raises(MonitorError, match="journalctl exited with 1: journalctl: broken"):
            await watcher.check({})
        seen += run.signals()
    broken.unlink()
    journal.write([journal.entry(f"ERROR {n}", unit="api.service") for n in (2, 3)])
    seen += (await watcher.check({})).signals  # the runner's check while follow waits
    journal.write([journal.entry("ERROR 4", unit="api.service")])
    async with following(watcher) as run:
        await run.until(lambda: bool(run.signals()))
        seen += run.signals()
        assert (await watcher.check({})).signals == []  # healthy again: the failure is over
    assert numbers(seen) == {("api.service", str(n)): 1 for n in (1, 2, 3, 4)}


async def test_a_journalctl_that_cannot_follow_is_run_again_and_counts_once(tmp_path, monkeypatch):
    """With no inotify instance left, journalctl --follow says so, prints what there is and
    ends (this wrapper makes it behave so); Guard reads on every second from where it was."""
    say = "echo 'Insufficient watch descriptors available. Reverting to -n.' >&2"
    wrap(tmp_path, monkeypatch, say, follow=False)
    journal, watcher = traced(tmp_path)
    trace = python_trace(5, 502).splitlines()
    async with following(watcher) as run:
        journal.write(
            [journal.entry(f"ERROR {n}", unit="api.service") for n in range(3)]
            + [journal.entry(line, unit="worker.service") for line in trace[:2]]
        )
        await run.until(lambda: len(numbers(run.signals("err"))) == 2)  # ERROR 2 is held
        journal.write(
            [journal.entry(line, unit="worker.service") for line in trace[2:]]
            + [journal.entry("worker ready", unit="worker.service")]
            + [journal.entry(f"ERROR {n}", unit="api.service") for n in range(3, 6)]
        )
        await run.until(lambda: bool(run.signals("app_error")))
        await run.until(lambda: len(numbers(run.signals("err"))) == 5)
    assert numbers(run.signals("err")) == {("api.service", str(n)): 1 for n in range(5)}
    [event] = run.signals("app_error")
    assert event.count == 1 and event.details["event_lines"] == 6


async def test_a_silent_journalctl_is_started_again_and_counts_once(tmp_path, monkeypatch):
    from guard.monitors import journald

    monkeypatch.setattr(journald, "QUIET_RESTART", 0.3)
    starts = tmp_path / "starts"
    wrap(tmp_path, monkeypatch, f"echo started >> {starts}")
    journal, watcher = traced(tmp_path)
    trace = python_trace(6, 504).splitlines()
    async with following(watcher) as run:
        for n in range(4):  # each after a silence: a journalctl started again reads it
            api, worker = f"ERROR {n}", trace[n]
            journal.write(
                [
                    journal.entry(api, unit="api.service"),
                    journal.entry(worker, unit="worker.service"),
                ]
            )

            def restarted(runs: int = n + 2) -> bool:
                return starts.read_text().count("started") >= runs

            await run.until(restarted)
        journal.write(
            [journal.entry(line, unit="worker.service") for line in [*trace[4:], "ready"]]
            + [journal.entry("ERROR 4", unit="api.service")]
        )
        await run.until(lambda: len(numbers(run.signals("err"))) == 4)  # ERROR 4 is held
        await run.until(lambda: bool(run.signals("app_error")))
    assert numbers(run.signals("err")) == {("api.service", str(n)): 1 for n in range(4)}
    [event] = run.signals("app_error")  # its lines came over four journalctl runs
    assert event.count == 1 and event.details["event_lines"] == 6


async def test_a_cursor_journalctl_cannot_seek_to_is_dropped_for_its_time(tmp_path):
    from guard.domain.exceptions import MonitorError

    journal = Journal(tmp_path / "journal")
    journal.write([journal.entry("ERROR 1 long ago", unit="api.service")])
    watcher = monitor(journal.folder, multiline="none")
    watcher.baseline({"cursor": "t=zz;garbage"})  # a state from elsewhere, or damaged
    with pytest.raises(MonitorError, match="cursor is dropped"):
        await watcher.check({})
    journal.write([journal.entry("ERROR 2 now", unit="api.service")])
    obs = await watcher.check({})  # from now (the cursor held no time): only what is new
    assert numbers(obs.signals) == {("api.service", "2"): 1}
    assert obs.state["cursor"]


def test_journal_files_guard_may_not_read_are_named_with_the_fix():
    """As the unprivileged guard user without the journal's group (a process that drops to uid
    10001 once it has loaded everything: root's Python is not readable by that user)."""
    with tempfile.TemporaryDirectory() as tmp:  # not under pytest's folder: it is root's only
        Path(tmp).chmod(0o755)
        out = _as_guard_user(Path(tmp))
    assert out.returncode != 0
    assert "No journal files were opened due to insufficient permissions" in out.stderr
    assert "cannot read the journal files: add their group, --group-add" in out.stderr


def _as_guard_user(tmp: Path) -> subprocess.CompletedProcess[str]:
    journal = Journal(tmp / "journal")
    journal.write([journal.entry("ERROR 1", unit="api.service")])
    journal.folder.chmod(0o755)  # the folder is open, the file (0640, root's group) is not
    code = (
        "import asyncio, concurrent.futures.thread, os;"
        "from tests.helpers.journal import monitor;"
        f"m = monitor({str(journal.folder)!r}, start='beginning');"
        "os.setgroups([]); os.setgid(10001); os.setuid(10001);"
        "asyncio.run(m.check({}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.unit
def test_a_missing_directory_or_journalctl_names_what_to_fix(tmp_path, monkeypatch):
    from guard.domain.exceptions import MonitorError

    gone = monitor(tmp_path / "nowhere")
    with pytest.raises(MonitorError, match=r"directory .*nowhere does not exist.*DEPLOY"):
        gone.command(follow=True)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MonitorError, match=r"monitor j \(type: journald\) needs journalctl"):
        monitor(tmp_path).command(follow=True)
