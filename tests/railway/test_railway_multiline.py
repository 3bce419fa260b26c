"""Multi-line events in Railway logs, against the local Railway: each line of a trace is a log
line of its own; Guard counts one event per trace, and holds one that may still go on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.fakes.railway import RailwayServer, iso, serve_railway
from tests.monitors.test_multiline import java_trace, python_trace
from tests.railway.test_railway import incidents, run_guard, setup_home

BOOK = """\
name: railway
monitors:
  - id: api-railway
    type: railway
    service: api
    environment: production
    start: beginning
{extra}    rules:
      - kind: app_error
        pattern: "Error|Exception|Traceback"
"""


@pytest.fixture
def railway() -> Iterator[RailwayServer]:
    yield from serve_railway()


def log_lines(server: RailwayServer, deployment: str, text: str, at: datetime) -> datetime:
    """Each line of ``text`` as its own Railway log line, a millisecond apart; the last time."""
    for line in text.splitlines():
        server.state.log(deployment, line, at=iso(at), severity="error")
        at += timedelta(milliseconds=1)
    return at


async def test_tracebacks_in_railway_logs_are_one_incident_per_exception(home, railway):
    dep = railway.state.deploy(status="SUCCESS")
    at = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    for order, code in ((1, 503), (2, 503), (3, 503)):
        at = log_lines(railway, dep["id"], python_trace(order, code), at)
    at = log_lines(railway, dep["id"], java_trace(7), at)
    setup_home(home, railway, playbook=BOOK.format(extra=""))
    await run_guard(home)
    found = {i.message.split(" for ")[0]: i for i in incidents(home, "app_error")}
    assert {m: i.count for m, i in found.items()} == {
        "clients.shop.ShopError: upstream 503": 3,
        'Exception in thread "main" java.lang.IllegalStateException: order 7 failed | '
        "Caused by: java.io.IOException: upstream answered 501": 1,
    }
    py = found["clients.shop.ShopError: upstream 503"]
    assert py.details["evidence"] == python_trace(1, 503).rstrip("\n")
    assert py.details["event_lines"] == 6 and py.target == "production/api:logs"
    await run_guard(home)  # a restart: nothing counts twice
    assert sum(i.count for i in incidents(home, "app_error")) == 4


async def test_a_trace_still_being_written_waits_and_then_counts_once_whole(home, railway):
    dep = railway.state.deploy(status="SUCCESS")
    trace = python_trace(4, 502).splitlines()
    now = datetime.now(UTC)
    log_lines(railway, dep["id"], "\n".join(trace[:-1]), now)  # no exception line yet
    book = BOOK.format(extra="    multiline: {preset: python, flush_after: 30s}\n")
    setup_home(home, railway, playbook=book)
    await run_guard(home)
    assert incidents(home, "app_error") == []  # it may go on: held, not cut
    first_ask = railway.ops("GuardDeploymentLogs")[-1].variables["startDate"]
    railway.state.log(dep["id"], trace[-1], at=iso(now + timedelta(milliseconds=10)))
    await run_guard(home)
    assert incidents(home, "app_error") == []  # still young: flush_after is 30 s
    # the cursor did not move past the held lines: the next check asks from the same place
    assert railway.ops("GuardDeploymentLogs")[-1].variables["startDate"] == first_ask
    book = BOOK.format(extra="    multiline: {preset: python, flush_after: 10ms}\n")
    setup_home(home, railway, playbook=book)
    await run_guard(home)
    [inc] = incidents(home, "app_error")
    assert inc.count == 1 and inc.message == trace[-1]
    assert inc.details["evidence"] == "\n".join(trace)
    await run_guard(home)
    assert incidents(home, "app_error")[0].count == 1


async def test_multiline_none_counts_every_line_as_before(home, railway):
    dep = railway.state.deploy(status="SUCCESS")
    log_lines(railway, dep["id"], python_trace(1, 503), datetime(2026, 12, 2, tzinfo=UTC))
    setup_home(home, railway, playbook=BOOK.format(extra="    multiline: none\n"))
    await run_guard(home)
    assert sum(i.count for i in incidents(home, "app_error")) == 3  # Traceback, raise, ShopError


async def test_a_lone_line_logged_just_now_counts_at_once_and_a_young_head_waits(home, railway):
    dep = railway.state.deploy(status="SUCCESS")
    now = datetime.now(UTC)
    railway.state.log(dep["id"], "WARN upstream timeout", at=iso(now))
    book = BOOK.replace('"Error|Exception|Traceback"', '"upstream timeout|Error"')
    setup_home(home, railway, playbook=book.format(extra="    multiline: {flush_after: 30s}\n"))
    await run_guard(home)
    assert [i.count for i in incidents(home, "app_error")] == [1]  # nothing can follow it
    railway.state.log(dep["id"], "Error: connect ECONNREFUSED", at=iso(now + timedelta(0, 1)))
    await run_guard(home)  # a node stack may follow that line: it waits
    assert sum(i.count for i in incidents(home, "app_error")) == 1
