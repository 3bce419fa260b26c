"""Multi-line events: a stack trace or a panic is one signal, one incident, with its block."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from guard.config import TriageSettings
from guard.domain.records import Observation
from guard.monitors.logfile import LogfileMonitor
from guard.playbooks.models import LogfileMonitorSpec
from guard.store.db import open_database
from guard.store.models import Incident
from guard.triage import Triage
from tests.conftest import GuardHome

pytestmark = pytest.mark.unit

RULES = [{"kind": "app_error", "pattern": "Error|Exception|Traceback|panic"}]


def python_trace(order: int, code: int, exc: str = "") -> str:
    last = exc or f"clients.shop.ShopError: upstream {code} for order {order}"
    return (
        "Traceback (most recent call last):\n"
        '  File "/app/worker.py", line 41, in handle\n'
        f"    charge(order_id={order})\n"
        '  File "/app/clients/shop.py", line 88, in charge\n'
        '    raise ShopError(f"upstream {code}")\n'
        f"{last}\n"
    )


def java_trace(order: int) -> str:
    return (
        f'Exception in thread "main" java.lang.IllegalStateException: order {order} failed\n'
        "\tat com.shop.Orders.place(Orders.java:42)\n"
        "\tat com.shop.Main.main(Main.java:10)\n"
        f"Caused by: java.io.IOException: upstream answered {500 + order % 3}\n"
        "\tat com.shop.Client.call(Client.java:88)\n"
        "\t... 1 more\n"
    )


def go_panic(index: int) -> str:
    return (
        f"panic: runtime error: index out of range [{index}] with length 3\n"
        "\n"
        "goroutine 1 [running]:\n"
        "main.lookup(...)\n"
        "\t/app/main.go:12\n"
        "main.main()\n"
        "\t/app/main.go:20 +0x1d\n"
    )


def monitor(path: Path, **kw: Any) -> LogfileMonitor:
    spec: dict[str, Any] = {"id": "app", "type": "logfile", "path": str(path)}
    spec.update({"start": "beginning", "rules": RULES, **kw})
    return LogfileMonitor(LogfileMonitorSpec.model_validate(spec))


def incidents(db: Any) -> list[Incident]:
    from sqlmodel import col, select

    with db.session() as session:
        return list(session.exec(select(Incident).order_by(col(Incident.id))).all())


def triaged(tmp_path: Path, text: str, **kw: Any) -> list[Incident]:
    log = tmp_path / "app.log"
    log.write_text(text)
    db = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    m = monitor(log, **kw)
    obs = m.scan({})
    Triage(db, TriageSettings()).process([Observation(obs.signals, obs.state, m.id)])
    return incidents(db)


def test_python_tracebacks_are_one_incident_per_exception(tmp_path: Path):
    text = "".join(
        [
            "2026-12-04T10:00:00Z INFO worker started\n",
            python_trace(17, 503),
            "2026-12-04T10:00:01Z INFO retrying\n",
            python_trace(18, 502),
            python_trace(19, 504, exc="KeyError: 'sku-19'"),
            python_trace(20, 503),
            "2026-12-04T10:00:02Z INFO still here\n",
            python_trace(21, 500, exc="KeyError: 'sku-19'"),
        ]
    )
    found = sorted(triaged(tmp_path, text), key=lambda i: -i.count)
    assert [i.count for i in found] == [3, 2]
    shop, key = found
    assert shop.message == "clients.shop.ShopError: upstream 503 for order 17"
    assert key.message == "KeyError: 'sku-19'"
    assert shop.details["evidence"] == python_trace(17, 503).rstrip("\n")
    assert shop.details["event_lines"] == 6


def test_a_log_without_multi_line_events_counts_as_before(tmp_path: Path):
    text = "".join(f"2026-12-04T10:00:{i:02d}Z Error: payment {i} declined\n" for i in range(30))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    auto = triaged(tmp_path / "a", text)
    none = triaged(tmp_path / "b", text, multiline="none")
    assert [(i.count, i.message) for i in auto] == [(i.count, i.message) for i in none]
    assert auto[0].count == 30 and "evidence" not in auto[0].details


def test_java_trace_with_caused_by_is_one_event_summarised_by_its_causes(tmp_path: Path):
    found = triaged(tmp_path, "".join(java_trace(n) for n in range(4)) + "INFO ok\n")
    assert [i.count for i in found] == [4]
    (inc,) = found
    assert inc.message.startswith('Exception in thread "main" java.lang.IllegalStateException')
    assert "| Caused by: java.io.IOException: upstream answered 500" in inc.message
    assert inc.details["evidence"].splitlines()[-1] == "\t... 1 more"
    assert inc.details["event_lines"] == 6


def test_go_panics_are_one_event_each(tmp_path: Path):
    text = "".join(go_panic(i) + "2026/12/04 10:00:00 restarting\n" for i in (5, 7))
    found = triaged(tmp_path, text)
    assert [i.count for i in found] == [2]
    assert found[0].message == "panic: runtime error: index out of range [5] with length 3"
    assert found[0].details["evidence"] == go_panic(5).rstrip("\n")


def test_chained_python_exceptions_stay_one_event_and_name_the_last(tmp_path: Path):
    text = (
        python_trace(1, 503)
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        + python_trace(1, 500, exc="RuntimeError: charge failed")
        + python_trace(2, 503)
    )
    found = sorted(triaged(tmp_path, text), key=lambda i: i.id or 0)
    assert [(i.count, i.message.split(":")[0]) for i in found] == [
        (1, "RuntimeError"),
        (1, "clients.shop.ShopError"),
    ]
    assert found[0].details["event_lines"] == 15


def test_start_and_continue_regexes(tmp_path: Path):
    text = "[10:00] Error: job failed\nstep 1 ok\nstep 2 boom\n[10:01] INFO fine\n[10:02] x\n"
    (tmp_path / "a").mkdir()
    by_start = triaged(tmp_path / "a", text, multiline={"start": r"^\["})
    assert [(i.count, i.details["event_lines"]) for i in by_start] == [(1, 3)]
    assert by_start[0].message == "[10:00] Error: job failed"
    (tmp_path / "b").mkdir()
    by_cont = triaged(tmp_path / "b", text, multiline={"continue": r"^step "})
    assert [i.details["event_lines"] for i in by_cont] == [3]


def test_a_10000_frame_traceback_is_one_capped_event(tmp_path: Path):
    frames = "".join(f'  File "/app/r.py", line {i}, in f\n    f()\n' for i in range(10_000))
    text = "Traceback (most recent call last):\n" + frames + "RecursionError: too deep\n"
    log = tmp_path / "app.log"
    log.write_text(text * 2)
    obs = monitor(log, multiline={"max_lines": 50}).scan({})
    (sig,) = obs.signals
    assert sig.count == 2 and sig.message == "RecursionError: too deep"
    lines = sig.details["evidence"].splitlines()
    assert sig.details["event_lines"] == 20_002
    assert len(lines) == 50 + 1 + 10 and lines[50] == "... 19942 more lines ..."
    assert lines[-1] == "RecursionError: too deep"


def test_an_event_longer_than_max_bytes_across_blocks_is_still_one_event(tmp_path: Path):
    frames = "".join(f'  File "/app/r.py", line {i}, in f\n    f()\n' for i in range(40_000))
    log = tmp_path / "app.log"
    log.write_text("Traceback (most recent call last):\n" + frames + "RecursionError: deep\nok\n")
    m = monitor(log)
    obs = m.scan({})
    assert [s.count for s in obs.signals] == [1]  # 2.2 MB: cut at max_bytes, the rest absorbed
    assert len(obs.signals[0].details["evidence"]) <= 65536
    assert obs.state["position"]["offset"] == log.stat().st_size


def test_the_last_event_waits_for_its_end_then_flush_after(tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text("")
    m = monitor(log, multiline={"flush_after": "0.3s"})
    state = m.scan({}).state
    with open(log, "a") as f:
        f.write(python_trace(1, 503)[:90])  # the traceback has begun, its end is not written
    obs = m.scan(state, hold=True)
    assert obs.signals == [] and obs.state["position"]["offset"] == 0
    with open(log, "a") as f:
        f.write(python_trace(1, 503)[90:])
    obs = asyncio.run(m.check(obs.state))  # waits until the file is quiet for flush_after
    assert [(s.count, s.message.split(":")[0]) for s in obs.signals] == [
        (1, "clients.shop.ShopError")
    ]
    assert obs.state["position"]["offset"] == log.stat().st_size


def test_a_held_event_resumes_whole_after_a_restart(tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text(python_trace(1, 503)[:90])
    state = monitor(log).scan({}, hold=True).state
    assert state["position"]["offset"] == 0
    with open(log, "a") as f:
        f.write(python_trace(1, 503)[90:] + "INFO next\n")
    old = time.time() - 5
    os.utime(log, (old, old))
    obs = monitor(log).scan(state, hold=True)  # a fresh monitor: Guard restarted
    assert [s.details["event_lines"] for s in obs.signals] == [6]


def test_incidents_show_prints_the_evidence(home: GuardHome, tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text(python_trace(1, 503) + "INFO ok\n")
    rules = [{"kind": "app_error", "pattern": "Error"}]
    home.playbook(
        "app",
        [{"id": "app", "type": "logfile", "path": str(log), "start": "beginning", "rules": rules}],
    )
    home.cli("run", "--once")
    text = home.cli("incidents", "show", "1").stdout
    assert "  evidence:\n    Traceback (most recent call last):\n" in text
    assert '        raise ShopError(f"upstream {code}")' in text
    shown = json.loads(home.cli("incidents", "show", "1", "--json").stdout)
    assert shown["details"]["evidence"].startswith("Traceback (most recent call last):")


def test_a_lone_line_waits_only_to_settle_and_an_event_begun_waits_flush_after():
    from guard.monitors.multiline import SETTLE, Framer
    from guard.playbooks.models import MultilineSpec

    framer = Framer(MultilineSpec(flush_after=1.0))
    lone = b"2026-12-05 ERROR payment failed for order 7\n"
    assert framer.wait_for(lone, 0) == SETTLE < 1.0
    block = b"INFO started\n" + lone
    assert framer.wait_for(block, block.index(b"2026")) == SETTLE
    for head in (
        b"Traceback (most recent call last):\n",  # its frames come next
        b'Exception in thread "main" java.lang.IllegalStateException: boom\n',
        b"Error: connect ECONNREFUSED 10.0.0.7:5432\n",  # node: its stack comes next
        b"panic: runtime error: index out of range\n",
        b"Stack trace:\n",
        python_trace(1, 500).encode(),  # several lines: more frames may follow
    ):
        assert framer.wait_for(head, 0) == 1.0, head
    custom = Framer(MultilineSpec(start=r"^\d{4}-", flush_after=2.0))
    assert custom.wait_for(lone, 0) == 2.0  # the user's regex decides: no guessing


@pytest.mark.unit
def test_the_first_byte_screen_lets_through_every_line_that_may_continue():
    from guard.monitors.multiline import _MAYBE, _MAYBE_FIRST

    shapes = [
        b" x",
        b"\tat a.b(C.java:1)",
        b"\r\n",
        b"\n",
        b"Caused by: x",
        b"Suppressed: x",
        b"Traceback (most recent call last):",
        b"During handling of the above exception, another exception occurred:",
        b"The above exception was the direct cause of the following exception:",
        b"goroutine 7 [running]:",
        b"[signal SIGSEGV: segmentation violation]",
        b"... 3 more",
        b"...12 more",
        b"created by main.main",
    ]
    for line in shapes:
        assert _MAYBE.match(line), line
        assert line[0] in _MAYBE_FIRST, line
    others = [bytes([b]) + b"aused by: goroutine 1 [" for b in range(256) if b not in _MAYBE_FIRST]
    assert not any(_MAYBE.match(line) for line in others)
