"""A silence pages nobody (issue #40, item 3), on a real ``guard run`` paging the local PagerDuty
Events API server: a critical fault matching a live silence is recorded (the incident exists,
silenced) and PagerDuty gets no trigger, while an unsilenced fault of the same service pages; once
the silence expires, the fault firing again is asked and paged. A silence made after a question
was asked (and paged) mutes that incident too: its page is resolved and its escalation step
never fires."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard.notify.pagers import dedup_key
from tests.conftest import GuardHome
from tests.ending.test_ending_run import DISK_RULE, FULL, setup_log_home, timeline, write
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.pagerduty import running as pagerduty
from tests.helpers.agent import find, running_guard, show, wait_for

PAYMENT = "ERROR payment provider timed out for order 7"
PAYMENT_RULE = {"kind": "payment_timeout", "pattern": "payment provider timed out"}
SECONDARY = ROUTING_KEY[::-1]
STEP_AFTER = 8.0  # seconds after the question the escalation step would page the secondary


@pytest.fixture
def pd() -> Iterator[PagerDutyServer]:
    with pagerduty() as server:
        yield server


def paged_home(home: GuardHome, pd: PagerDutyServer) -> Path:
    """Service ``api``'s log, both rules critical, routed to PagerDuty, with an escalation
    step to a second routing key; no skill, so Guard asks (and pages)."""
    critical = tuple({**r, "severity": "critical"} for r in (DISK_RULE, PAYMENT_RULE))
    return setup_log_home(
        home,
        rules=critical,
        sandbox={"backend": "local"},
        notifiers={
            "pagerduty": {
                "primary": {"routing_key": ROUTING_KEY, "url": pd.url},
                "secondary": {"routing_key": SECONDARY, "url": pd.url},
            }
        },
        routes=[{"match": {"severity": "critical"}, "notify": ["pagerduty:primary"]}],
        escalation={
            "check_every": "500ms",
            "steps": [{"after": f"{STEP_AFTER:g}s", "notify": ["pagerduty:secondary"]}],
        },
    )


def triggers(pd: PagerDutyServer, incident_id: int) -> list[str]:
    """The routing keys PagerDuty was triggered on for the incident."""
    events = pd.events_for(dedup_key(incident_id))
    return [e["routing_key"] for e in events if e["event_action"] == "trigger"]


def test_a_silenced_fault_pages_nobody_until_the_silence_expires(
    home: GuardHome, pd: PagerDutyServer
) -> None:
    log = paged_home(home, pd)
    with running_guard(home):
        home.cli("silence", "kind=disk_full", "--for", "10s")
        write(log, FULL[0])
        disk = wait_for(lambda: find(home, kind="disk_full"), 20, "the disk incident (recorded)")
        n = int(disk["id"])
        wait_for(lambda: show(home, n)["state"] == "muted", 20, "it to be silenced")
        assert show(home, n)["details"]["silenced"]["silence"] == 1
        write(log, PAYMENT)  # a fault no silence matches: it pages
        pay = wait_for(lambda: find(home, kind="payment_timeout"), 20, "the payment incident")
        pd.wait_for(lambda s: triggers(s, int(pay["id"])) == [ROUTING_KEY])
        assert pd.actions(dedup_key(n)) == []  # the silenced one paged nobody
        assert not timeline(home, n, "asked_human")

        wait_for(lambda: home.cli("silences").stdout.startswith("no silences"), 30, "expiry")
        write(log, FULL[1])  # the fault fires again after the expiry: asked and paged
        wait_for(lambda: timeline(home, n, "asked_human"), 30, "a question")
        pd.wait_for(lambda s: triggers(s, n) == [ROUTING_KEY])
    assert show(home, n)["count"] == 2


def test_a_silence_mutes_a_question_already_asked_and_its_escalation_stops(
    home: GuardHome, pd: PagerDutyServer
) -> None:
    log = paged_home(home, pd)
    with running_guard(home):
        write(log, FULL[0])
        disk = wait_for(lambda: find(home, state="awaiting_human"), 30, "the question")
        n = int(disk["id"])
        pd.wait_for(lambda s: triggers(s, n) == [ROUTING_KEY])  # asked and paged
        asked = time.monotonic()
        made = home.cli("silence", "service=api", "kind=disk_full", "--for", "1h").stdout
        assert "1 incident already asked is silenced too (#" in made, made
        shown = show(home, n)
        assert shown["state"] == "muted" and shown["details"]["silenced"]["silence"] == 1
        (moved,) = [t for t in timeline(home, n, "state_changed") if t["to_state"] == "muted"]
        assert str(moved["message"]).startswith("silenced by silence #1 (service=api "), moved
        pd.wait_for(lambda s: s.actions(dedup_key(n)) == ["trigger", "resolve"])  # unpaged
        wait_for(lambda: time.monotonic() - asked > STEP_AFTER + 2, 30, "the step's time")
        assert triggers(pd, n) == [ROUTING_KEY]  # the escalation step never fired
        assert not timeline(home, n, "escalation_step")
