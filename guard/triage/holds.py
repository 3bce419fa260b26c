"""Expected effects: a signal that Guard's own remedy explains opens nothing.

While a remedy holds a target (``guard.store.holds``), a firing signal on that target, or
from a monitor of the held service or of a service that depends on it, is matched against
what the remedy's action explains (``guard.agent.holding.EFFECTS``'s classes):

- ``exit`` (a container's exit or restart, any code): while the action acts and for
  ``EXIT_GRACE`` after it (the engine reports the stop's ``die`` before the call returns; the
  grace covers clock skew). A crash after that is the container's own, even seconds later:
  it must open or reopen at once, or a fault right after a verified fix would go unseen;
- ``logs`` (a log rule's line): while the action acts and for ``agent.settle`` after it (the
  start, the dependants' reconnects);
- ``health`` (unhealthy) and ``http`` (an HTTP check failing): for the whole hold, until the
  run's verification ended and ``agent.settle`` passed (verification is what judges them).

Nothing is explained before the run's first action step begins (its ``wait`` and diagnosis
steps act on nothing): a symptom seen then is the fault's, and joins its incident as before.

Such a signal is an *expected effect*: a timeline entry on the held incident (the first
``NOTED`` of them; the hold counts them all) and nothing else: it opens, reopens, joins and
counts toward no incident, nor toward its check's ``for: N``. An OOM, a log line or an exit
after the action's window, or a signal of anything else, goes through triage as before.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlmodel import Session

from guard.domain.records import Signal
from guard.incidents.lifecycle import record
from guard.store import holds
from guard.store.models import Incident
from guard.triage.counting import ACTOR

EXIT_GRACE = timedelta(seconds=2)  # an exit this long after the action is not the action's
NOTED = 20  # expected effects written to one incident's timeline (the hold counts the rest)
EXIT_KINDS = frozenset({"container_exited", "container_restarting"})
HEALTH_KINDS = frozenset({"container_unhealthy"})


def effect(sig: Signal) -> str | None:
    """The effect class of a firing signal (None: no remedy explains it)."""
    if "rule" in sig.details:
        return "logs"
    if sig.kind in EXIT_KINDS:
        return "exit"
    if sig.kind in HEALTH_KINDS:
        return "health"
    if sig.source == "http":
        return "http"
    return None


def _within(hold: holds.Hold, effect_: str, at: datetime) -> bool:
    if effect_ not in hold.explains:
        return False
    since = (hold.details or {}).get("acting_since")
    if since is None and hold.acted_at is None:  # its run waits or diagnoses: not acted yet,
        return False  # so what fails now is the fault's own symptom (it joins, as before)
    began = datetime.fromisoformat(since) if since else hold.started_at
    if at < began - timedelta(seconds=1):
        return False
    if effect_ == "exit" and hold.acted_at is not None:  # the action's own stop
        return at <= hold.acted_at + EXIT_GRACE
    if effect_ == "logs" and hold.acted_at is not None:  # the action's window
        return at <= hold.acted_at + timedelta(seconds=hold.settle)
    return hold.ends_at is None or at <= hold.ends_at


class Holds:
    """Triage's view of the live holds, read once per batch (at its first failing signal)."""

    def __init__(self, service: Callable[[str], str | None]) -> None:
        self.service = service  # a monitor's service (correlation's: reloads update it)
        self._live: list[holds.Hold] | None = None

    def begin(self) -> None:
        """A new batch: the holds are read again."""
        self._live = None

    def expected(self, session: Session, sig: Signal) -> bool:
        """Whether ``sig`` is a held remedy's expected effect (then noted; nothing else)."""
        kind = effect(sig)
        if kind is None:
            return False
        if self._live is None:
            self._live = holds.live(session)
        service = self.service(sig.monitor_id)
        for hold in self._live:
            covered = sig.target == hold.target or (
                service is not None and service in hold.services
            )
            if covered and _within(hold, kind, sig.observed_at):
                self._note(session, hold, sig)
                return True
        return False

    def _note(self, session: Session, hold: holds.Hold, sig: Signal) -> None:
        hold.effects += 1
        session.add(hold)
        inc = session.get(Incident, hold.incident_id)
        if inc is None or hold.effects > NOTED:
            return
        record(
            session,
            inc,
            "expected_effect",
            f"expected effect of {hold.action or 'the remedy'} on {hold.target}: {sig.message}",
            actor=ACTOR,
            audit_it=False,
            hold=hold.id,
            monitor=sig.monitor_id,
            kind=sig.kind,
            target=sig.target,
            count=sig.count,
        )
