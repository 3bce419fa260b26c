"""The journal, from real journal files (systemd-journal-remote) read by the real journalctl:
units and priority, tracebacks as one event, resume by cursor, bounded memory, Guard end to
end, the investigation's recent_logs and verification. (journalctl failing, unable to follow
or silent: test_journald_process.py.)"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from guard.domain.records import Observation
from guard.monitors import build_monitor
from guard.monitors.journald import JournaldMonitor
from tests.helpers.journal import RULES, Journal, following, monitor, numbers, spec
from tests.monitors.test_multiline import python_trace


async def test_units_and_priority_choose_the_entries(tmp_path):
    journal = Journal(tmp_path / "journal")
    journal.write(
        [
            journal.entry("ERROR 1 api failed", unit="api.service", priority=3),
            journal.entry("ERROR 2 api at info", unit="api.service", priority=6),
            journal.entry("ERROR 3 web failed", unit="web.service", priority=3),
            journal.entry("ERROR 4 db critical", unit="db.service", priority=2),
            journal.entry("ERROR 5 db warning", unit="db.service", priority=4),
        ]
    )
    picky = monitor(journal.folder, units=["api.service", "db"], priority="err", start="beginning")
    obs = await picky.check({})
    assert numbers(obs.signals) == {("api.service", "1"): 1, ("db.service", "4"): 1}
    assert {s.source for s in obs.signals} == {"journald"}
    warning = monitor(journal.folder, priority=4, start="beginning")  # a number: 4 is warning
    got = numbers((await warning.check({})).signals)
    assert set(got) == {("api.service", "1"), ("web.service", "3"), ("db.service", "4"),
                        ("db.service", "5")}  # fmt: skip
    everything = monitor(journal.folder, start="beginning")
    assert len(numbers((await everything.check({})).signals)) == 5
    follower = monitor(journal.folder, units=["web.service"], priority="err")
    follower.baseline({})  # Guard's start: what is in the journal now is not new
    async with following(follower) as run:
        journal.write(
            [
                journal.entry("ERROR 6 web again", unit="web.service", priority=3),
                journal.entry("ERROR 7 api again", unit="api.service", priority=3),
                journal.entry("ERROR 8 web info", unit="web.service", priority=6),
                journal.entry("ERROR 9 web alert", unit="web.service", priority=1),
            ]
        )
        await run.until(lambda: ("web.service", "9") in numbers(run.signals()))
    assert numbers(run.signals()) == {("web.service", "6"): 1, ("web.service", "9"): 1}


async def test_a_python_traceback_of_one_entry_a_line_is_one_event(tmp_path):
    journal = Journal(tmp_path / "journal")
    trace = python_trace(7, 503).splitlines()
    entries = []
    for i, line in enumerate(trace):  # another unit writes in between; systemd splits lines
        entries.append(journal.entry(line, unit="worker.service", priority=3))
        entries.append(journal.entry(f"GET /health {i} 200", unit="web.service"))
    entries.append(journal.entry("worker ready", unit="worker.service"))
    rules = [{"kind": "app_error", "pattern": "Error|Traceback"}]
    async with following(monitor(journal.folder, rules=rules, start="beginning")) as run:
        journal.write(entries)
        await run.until(lambda: bool(run.signals("app_error")))
    [sig] = run.signals("app_error")
    assert sig.target == "worker.service" and sig.count == 1
    assert sig.message == "clients.shop.ShopError: upstream 503 for order 7"
    assert sig.details["event_lines"] == len(trace) == 6
    assert sig.details["evidence"].splitlines() == trace  # no web.service line inside


async def test_multiline_start_and_max_lines_apply_to_the_journal(tmp_path):
    journal = Journal(tmp_path / "journal")
    lines = ["[job 7] FAILED step 3", *(f"detail {n}" for n in range(20)), "[job 8] ok"]
    journal.write([journal.entry(line, unit="batch.service") for line in lines])
    rules = [{"kind": "job_failed", "pattern": "FAILED"}]
    multiline = {"start": r"^\[job ", "max_lines": 3}
    obs = await monitor(journal.folder, rules=rules, start="beginning", multiline=multiline).check(
        {}
    )
    [sig] = obs.signals
    assert sig.details["event_lines"] == 21 and sig.message == "[job 7] FAILED step 3"
    kept = sig.details["evidence"].splitlines()  # the first max_lines, and the last 10
    assert kept == [*lines[:3], "... 8 more lines ...", *lines[11:21]]


async def test_resume_by_cursor_counts_nothing_twice_and_skips_nothing(tmp_path):
    """Guard is killed with a traceback half written and another unit counted after it; more
    entries arrive while it is down, in the same journal file and in a new one."""
    journal = Journal(tmp_path / "journal")
    journal.write([journal.entry(f"ERROR {n} before Guard", unit="old.service") for n in range(3)])
    rules = [*RULES, {"kind": "app_error", "pattern": "ShopError"}]
    kw = {"rules": rules, "multiline": {"flush_after": "1h"}}
    first = monitor(journal.folder, **kw)
    assert first.baseline({}) is not None  # Guard's start: the end of the journal
    trace = python_trace(1, 502).splitlines()
    async with following(first) as run:
        journal.write(
            [journal.entry(f"ERROR {n}", unit="api.service") for n in range(10)]
            + [journal.entry(line, unit="worker.service") for line in trace[:3]]
            + [journal.entry(f"ERROR {n}", unit="web.service") for n in range(10, 15)]
        )
        # the last entry of each unit is held (its event might go on): ERROR 9 and 14
        await run.until(lambda: len(numbers(run.signals("err"))) == 13)
    assert not run.signals("app_error")  # the traceback was pending: not counted
    journal.write(
        [journal.entry(line, unit="worker.service") for line in trace[3:]]
        + [journal.entry("worker ready", unit="worker.service")]
        + [journal.entry("ERROR 15", unit="api.service")]
    )
    journal.write(
        [journal.entry(f"ERROR {n}", unit="web.service") for n in range(16, 20)], "y.journal"
    )
    second = monitor(journal.folder, **kw)
    assert second.baseline(run.state()) is None
    async with following(second) as run2:
        await run2.until(lambda: len(numbers(run.signals("err") + run2.signals("err"))) == 18)
        await run2.until(lambda: bool(run2.signals("app_error")))
    got = numbers(run.signals("err") + run2.signals("err"))
    held = {15, 19}  # the last entries of api and web
    assert got == {(u, str(n)): 1 for n, u in _units(20) if n not in held}
    [trace_sig] = run2.signals("app_error")
    assert trace_sig.count == 1 and trace_sig.details["event_lines"] == 6
    # a check where nothing follows (guard run --once) resumes from there and reads to the end
    third = monitor(journal.folder, **kw)
    obs = await third.check(run2.state())
    assert numbers(obs.signals) == {("api.service", "15"): 1, ("web.service", "19"): 1}
    assert not (await third.check(obs.state)).signals


def _units(n: int) -> list[tuple[int, str]]:
    """``(n, unit)`` of ``ERROR n`` in the resume test."""
    return [(i, "api.service" if i < 10 or i == 15 else "web.service") for i in range(n)]


async def checked_with_peak(reader: JournaldMonitor) -> tuple[Observation, int]:
    """One check from the beginning, and the peak of Python's allocations meanwhile."""
    tracemalloc.start()
    try:
        obs = await reader.check({})
        return obs, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_a_huge_message_and_a_binary_one_stay_bounded(tmp_path):
    journal = Journal(tmp_path / "journal")
    huge = b"BOOM huge " + b"x" * (16 << 20)
    journal.write(
        [
            journal.entry(huge, unit="big.service", priority=3),
            journal.entry(b"BOOM binary \xff\xfe\x00 end", unit="big.service", priority=3),
            journal.entry("BOOM after", unit="big.service", priority=3),
        ]
    )
    rules = [{"kind": "boom", "pattern": "BOOM", "group_by": "rule"}]
    reader = monitor(journal.folder, rules=rules, start="beginning", max_line_bytes=4096)
    obs, peak = await checked_with_peak(reader)
    assert peak < 8 << 20, peak  # half the message: it was never held whole
    [sig] = obs.signals
    assert sig.count == 3 and sig.details["line_cut_at_bytes"] == 4096
    assert sig.message.startswith("BOOM huge xxx") and len(sig.message) <= 1000
    assert obs.state["cursor"]


async def test_a_flood_and_an_endless_traceback_stay_bounded(tmp_path):
    journal = Journal(tmp_path / "journal")
    entries = [journal.entry("Traceback (most recent call last):", unit="worker.service")]
    for n in range(5_000):
        entries.append(journal.entry(f"ERROR {n} flood", unit="flood.service", priority=3))
        entries.append(
            journal.entry(f'  File "/app/loop.py", line {n}, in f', unit="worker.service")
        )
    journal.write(entries)
    rules = [
        {"kind": "flood", "pattern": "ERROR", "group_by": "rule"},
        {"kind": "trace", "pattern": "Traceback|File", "group_by": "rule"},
    ]
    reader = monitor(journal.folder, rules=rules, start="beginning", multiline={"max_bytes": 4096})
    obs, peak = await checked_with_peak(reader)
    assert peak < 4 << 20, peak  # the journal's JSON is ~4 MB: never held whole
    by_kind = {s.kind: s for s in obs.signals}
    assert by_kind["flood"].count == 5_000
    trace = by_kind["trace"]  # an endless trace: events of at most max_bytes, not one per line
    assert trace.count < 200 and len(trace.details["evidence"]) <= 4096


async def test_guard_opens_an_incident_from_the_journal_and_a_restart_counts_nothing_twice(
    home, tmp_path
):
    from tests.monitors.test_docker_monitor import running_guard, wait_for_incident

    journal = Journal(tmp_path / "journal")
    pay = [journal.entry("ERROR payment failed before Guard", unit="pay.service", priority=3)]
    journal.write(pay)  # already there when Guard starts: not new
    rules = [
        {"kind": "payment_failed", "pattern": "payment failed"},
        {"kind": "sentinel", "pattern": "SENTINEL (?P<n>\\d+)", "group_by": ["n"]},
    ]
    watch: dict[str, Any] = {"id": "journal", "type": "journald", "directory": str(journal.folder)}
    watch |= {"units": ["pay.service"], "priority": "err", "every": "1h", "rules": rules}
    home.playbook("host", [watch])

    def failed(n: int) -> list[bytes]:
        return [
            journal.entry(f"ERROR payment failed for order {n}", unit="pay.service", priority=3),
            journal.entry(f"payment failed for order {n}, retrying", unit="pay.service"),  # info
            journal.entry(f"payment failed for order {n}", unit="shop.service", priority=3),
        ]

    def payment(inc: Any) -> bool:
        return inc.kind == "payment_failed"

    g, task = await running_guard(home)
    try:
        journal.write(failed(1) + failed(2) + failed(3))
        inc = await wait_for_incident(home, lambda i: payment(i) and i.count == 3, within=60)
        assert inc.target == "pay.service" and inc.source == "journald"
    finally:
        g.stop()
        await task
    journal.write(failed(4) + failed(5))  # while Guard is down
    g, task = await running_guard(home)  # resumes at the stored cursor
    try:
        journal.write([journal.entry("SENTINEL 1", unit="pay.service", priority=2)])
        await wait_for_incident(home, lambda i: i.kind == "sentinel", within=60)
    finally:
        g.stop()
        await task
    again = await wait_for_incident(home, payment)
    assert again.count == 5  # the two written while down, once; nothing before Guard or twice


async def test_the_model_reads_the_recent_journal_of_the_incidents_unit(tmp_path):
    from types import SimpleNamespace

    from guard.agent.tools import Toolbox

    journal = Journal(tmp_path / "journal")
    journal.write(
        [journal.entry(f"pay line {n}", unit="pay.service") for n in range(5)]
        + [journal.entry("shop line", unit="shop.service")]
    )
    obs = await monitor(journal.folder, start="beginning").check({})
    inc = SimpleNamespace(source="journald", target="pay.service", details={}, message="")
    inc.details = {"directory": str(journal.folder)}  # as the signals carry it
    assert all(s.details["directory"] == str(journal.folder) for s in obs.signals)
    box = Toolbox(inc, *([None] * 5), timeout=10)  # type: ignore[arg-type,misc]
    out = await box.call("recent_logs", {"lines": 2})
    assert [line.split(": ", 1)[1] for line in out.splitlines()] == ["pay line 3", "pay line 4"]
    inc.details = {"directory": str(tmp_path / "gone")}
    with pytest.raises(Exception, match="cannot read the journal"):
        await box.call("recent_logs", {"lines": 2})


async def test_verification_reads_the_journal_from_where_the_monitor_is(tmp_path):
    from types import SimpleNamespace

    from guard.agent.verify import Verifier
    from guard.skills.model import VerifySpec
    from guard.store.db import open_database
    from guard.store.state import put_state

    journal = Journal(tmp_path / "journal")
    journal.write([journal.entry("ERROR 1 before the fix", unit="pay.service")])
    watch = spec(journal.folder, rules=RULES, start="beginning", multiline="none")
    running = build_monitor(watch)
    obs = await running.check({})  # the running monitor counted it and stored its cursor
    [sig] = obs.signals
    db = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    with db.session() as session:
        put_state(session, "monitor:j", obs.state)
    inc = SimpleNamespace(
        monitor_id="j", source="journald", target="pay.service", kind="err", details=sig.details
    )
    verifier = Verifier(db, {"j": watch})
    quick = VerifySpec(timeout=0.5, interval=0.1, quiet=0.05)
    assert (await verifier.verify(inc, quick)).passed  # nothing new since the cursor
    journal.write([journal.entry("ERROR 2 after the fix", unit="pay.service")])
    verdict = await verifier.verify(inc, quick)
    assert not verdict.passed and "ERROR 2 after the fix" in verdict.reason
