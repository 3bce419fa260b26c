"""Crash points: a test-only hook that SIGKILLs Guard at a named step of an incident.

``GUARD_CRASH_AT=<point>[:<n>]`` (read once, at import) makes the n-th (default first) call of
``reached(point)`` kill the process with SIGKILL: no ``finally``, no flush, no clean-up runs,
exactly like a power cut or the OOM killer. ``bench.crash`` and ``tests/reliability`` use it to
restart Guard after each point and check that nothing was lost, repeated or left half done.

Unset (production), ``reached`` costs one comparison. This module imports nothing from Guard,
so any layer may call it.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["POINTS", "reached"]

# Every point Guard calls ``reached`` with, and where (bench.crash kills Guard at each one).
POINTS: dict[str, str] = {
    "triage.signal_stored": "triage: the batch's signals are in the transaction, no incident yet",
    "triage.storm_fold": "triage: a signal is folded into a storm incident, not committed",
    "triage.flap_reopen": "triage: a resolved incident is being reopened (flap), not committed",
    "triage.correlated": "triage: a signal joined an open incident as related, not committed",
    "logfile.cursor_save": "logfile: the new position is read, its transaction not committed",
    "agent.opened_not_taken": "the incident is open and announced; no worker has taken it",
    "agent.diagnosing": "the incident is diagnosing; diagnosis has not finished",
    "remedy.held": "a run, its steps and its hold on the target are stored; no step ran",
    "step.started": "a step is marked running, before it acts",
    "step.ended": "a step is marked done, before the next one starts",
    "remedy.before_verify": "the remedy ran; its verify step has not started",
    "verify.during": "verify: one check ran, the verdict is not stored",
    "verify.before_state": "the run is verified, before the run and incident are settled",
    "verdict.stored": "the run's verdict is in its transaction; its ladder step not yet",
    "ladder.step": "a demotion or a proposal is in its verdict's transaction, not audited",
    "learning.files_written": "learning: the skill's files are written, not committed",
    "learning.committed": "learning: the skill is committed, the incident not resolved",
    "outbox.sent_before_id": "outbox: a channel took the message, its id is not stored",
    "outbox.edited_before_mark": "outbox: a channel took an edit, the row is not marked sent",
    "audit.append": "an audit entry is being appended, its transaction not committed",
    "command.queued": "a human command is queued, not taken by the agent",
    "command.taken": "a human command was taken, its fix has not started",
    "report.sending": "the daily report and its chart are queued to the chat, not yet sent",
    "report.sent_before_mark": "the daily report was sent, not yet marked sent",
    "incident.resolving": "the incident is about to be resolved (the state change)",
    "agent.asking": "the agent decided to ask a human; the question is not stored",
    "escalation.step_recorded": "an escalation step and its pages are written, not committed",
    "escalation.step_committed": "an escalation step is committed; its pages not yet delivered",
    "escalation.reminder_recorded": "a reminder and its messages are written, not committed",
    "quiet.asked_not_marked": "a question held by quiet hours was asked, its hold not settled",
    "page.claimed": "pages: a page's send is claimed (fenced); the pager is not called yet",
    "page.sent_before_mark": "pages: a pager or webhook took the page; it is not marked sent",
}


def _parse(value: str | None) -> tuple[str, int] | None:
    if not value:
        return None
    point, _, nth = value.partition(":")
    return point, int(nth) if nth else 1


_UNREAD: tuple[str, int] = ("", 0)
_target: tuple[str, int] | None = _UNREAD  # read at the first point reached, not at import
_seen = 0


def reached(point: str) -> None:
    """Guard reached ``point``; die here if ``GUARD_CRASH_AT`` names it (test-only)."""
    global _seen, _target
    if _target is _UNREAD:
        _target = _parse(os.environ.get("GUARD_CRASH_AT"))
    if _target is None or point != _target[0]:
        return
    _seen += 1
    if _seen >= _target[1]:
        sys.stderr.write(f"crashpoint {point} reached ({_seen}): SIGKILL\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
