"""Passing checks: what an ``ok`` signal resolves, and the passes the agent's work held back.

A pass resolves its check's incidents that auto-resolve may end (``incidents.lifecycle``), not a
log rule's (its lines stopping ends it: ``triage.quiet``), not a flapping one until the check
has passed for a whole ``flap_window``, not one a related check still holds open
(``correlation``), and not a keyed alert whose other firings go on (``redelivery``).

The agent's work decides the rest:

- an incident being **diagnosed** keeps the pass (:attr:`Passing.held`), tried again each time
  triage calms (``CALM_EVERY``) until the agent lets go of it (asks a human, say), unless the
  check fails again first: a watch reports a recovery once, and a question about a healed
  service is a lie;
- one being **remediated** is left to the remedy's verification.

A check found with nothing to resolve is not asked about again for ``QUIET_TTL`` seconds (only
triage opens incidents, and it forgets the check when a failure comes: :meth:`Passing.failed`).
A batch's passes due that look are asked about in one query (:meth:`Passing.look`): a thousand
HTTP checks were sixteen queries a second, one per check.

Tested by ``tests/triage/test_triage.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from guard.domain.records import IncidentEvent, Signal
from guard.incidents.ending import ends_by_quiet
from guard.incidents.lifecycle import AGENT_WORKING, AUTO_RESOLVABLE
from guard.store.models import Incident, IncidentState
from guard.triage import quiet, redelivery
from guard.triage.correlation import Correlation

QUIET_TTL = 60.0  # seconds a check with nothing to resolve is trusted to stay so


class Passing:
    """Resolves what passing checks may; remembers the checks with nothing to resolve and the
    passes held back while the agent diagnoses."""

    def __init__(self, correlation: Correlation, flap_window: float) -> None:
        self.correlation = correlation
        self.flap_window = flap_window
        self.quiet: dict[str, float] = {}  # check key -> when it had nothing to resolve
        self.held: dict[str, Signal] = {}  # check key -> a pass the agent's work held back

    def passed(
        self, session: Session, sig: Signal, ok_since: str, events: list[IncidentEvent]
    ) -> None:
        """``sig`` passed (its check has since ``ok_since``): resolve what it may."""
        if not self._due(sig.check_key, time.monotonic()):
            return
        self.settle(session, sig, ok_since, events)

    def look(self, session: Session, passes: list[Signal]) -> None:
        """One query for the checks among ``passes`` due a look: those with no incident that a
        pass may end or the agent works on are quiet from now on (``passed`` skips them); the
        others are settled one by one as they come."""
        now = time.monotonic()
        due = {s.check_key for s in passes if self._due(s.check_key, now)}
        if not due:
            return
        busy = set(
            session.exec(
                select(Incident.check_key).where(
                    col(Incident.check_key).in_(due),
                    col(Incident.state).in_(AUTO_RESOLVABLE | AGENT_WORKING),
                )
            ).all()
        )
        for key in due - busy:
            self.quiet[key] = now

    def _due(self, check_key: str, now: float) -> bool:
        """Whether ``check_key`` is due a look: not found quiet within ``QUIET_TTL``."""
        return now - self.quiet.get(check_key, -QUIET_TTL) >= QUIET_TTL

    def failed(self, check_key: str) -> None:
        """The check failed: it may have an incident now, and no held pass stands."""
        self.quiet.pop(check_key, None)
        self.held.pop(check_key, None)

    def retry_held(
        self, session: Session, ok_since: Callable[[Signal], str], events: list[IncidentEvent]
    ) -> None:
        """Try the held passes again (the agent may have let go)."""
        for sig in list(self.held.values()):
            self.settle(session, sig, ok_since(sig), events)

    def forget(self) -> None:
        """Drop what is remembered (a rollback, or the caches grew too big)."""
        self.quiet.clear()

    def settle(
        self, session: Session, sig: Signal, ok_since: str, events: list[IncidentEvent]
    ) -> None:
        """Resolve the incidents of ``sig``'s check that it may; hold it for those the agent
        is diagnosing."""
        self.held.pop(sig.check_key, None)
        open_ones = session.exec(
            select(Incident).where(
                Incident.check_key == sig.check_key,
                col(Incident.state).in_(AUTO_RESOLVABLE | AGENT_WORKING),
            )
        ).all()
        if not open_ones:
            self.quiet[sig.check_key] = time.monotonic()
        stable_for = (sig.observed_at - datetime.fromisoformat(ok_since)).total_seconds()
        for incident in open_ones:
            if ends_by_quiet(incident):  # a log rule's: its lines stopping ends it
                continue
            if incident.state == IncidentState.diagnosing:  # asked about once it lets go
                self.held[sig.check_key] = sig
                continue
            if incident.state in AGENT_WORKING:  # its remedy's verification decides
                continue
            if incident.flapping and stable_for < self.flap_window:
                continue
            if self.correlation.holds(session, incident):  # a related check still fails
                continue
            self._resolve(session, incident, sig, events)

    @staticmethod
    def _resolve(
        session: Session, incident: Incident, sig: Signal, events: list[IncidentEvent]
    ) -> None:
        details: dict[str, Any]
        details, resolves = redelivery.settle(incident.details, sig)
        if details is not incident.details:  # keyed alerts only: others change nothing
            incident.details = details
        if not resolves:  # another alert of it still fires, or this ends an older one
            return
        # dated when the pass was observed, not when stored: behind a locked or full store a
        # failure asked after the pass but stored with it would look older than the
        # resolution and reopen nothing (``flapping.asked_before_verdict``): an outage lost
        quiet.resolve(
            session, incident, f"check passed again: {sig.message}", events, at=sig.observed_at
        )
