"""Undoing a wrong join: a related signal becomes an incident of its own, for good.

``split`` runs in one transaction: the gate decides first (verb ``split``, operator role; a
refusal is audited and nothing else changes), then each stored row of the related signal (one
monitor on one target: a log that wrote two different lines has two) becomes a new open
incident with its count, first and last seen, the root's timeline says so, and the pair (the
root's fingerprint, the row's) is remembered (``CorrelationSplit``) so correlation never
joins them again. The agent takes the new incident like any other left open (its
sweep, within ``agent.recovery``'s interval).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, select

from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.incidents.gate import Actor, Allowed, Gate, NotAuthorised, authorise_in
from guard.incidents.lifecycle import opened, record
from guard.store.correlation import CorrelationSplit, RelatedSignal
from guard.store.db import Database
from guard.store.models import Incident
from guard.triage.correlation import signal_line
from guard.triage.related_groups import RelatedGroup, group_line, grouped

VERB = "split"


class SplitError(GuardError):
    """The incident or the signal named does not exist, or the signal is ambiguous."""


@dataclass(frozen=True)
class Split:
    root_id: int
    incident_id: int  # the new incident (the first, when the signal was several rows)
    signal: str  # how the signal is named in messages
    incident_ids: tuple[int, ...] = ()  # every new incident, one per stored row


def find_signal(session: Session, root_id: int, signal: str) -> RelatedGroup:
    """The related signal of incident ``root_id`` named ``signal`` (one monitor on one target,
    ``guard.triage.related_groups``): its id or any of its rows' ids (as ``incidents show``
    lists them), or its monitor's id when that monitor has one there."""
    rows = list(
        session.exec(
            select(RelatedSignal)
            .where(RelatedSignal.incident_id == root_id)
            .order_by(col(RelatedSignal.id))
        )
    )
    groups = grouped(rows)
    if signal.isdigit():
        found = [g for g in groups if int(signal) in g.ids]
    else:
        found = [g for g in groups if g.monitor_id == signal]
    if len(found) == 1:
        return found[0]
    shown = ", ".join(f"{g.id} ({g.monitor_id})" for g in groups) or "none"
    if found:
        raise SplitError(
            f"monitor {signal!r} has {len(found)} related signals on incident {root_id}: "
            f"name one by id ({shown})"
        )
    raise SplitError(f"incident {root_id} has no related signal {signal!r} (related: {shown})")


def _new_incident(row: RelatedSignal) -> Incident:
    details = dict(row.details)
    if row.service is not None:
        details["service"] = row.service
    return Incident(
        fingerprint=row.fingerprint,
        check_key=row.check_key,
        monitor_id=row.monitor_id,
        source=row.source,
        target=row.target,
        kind=row.kind,
        severity=row.severity,
        title=f"{row.kind.replace('_', ' ')} on {row.target}",
        message=row.message,
        count=row.count,
        opened_at=utcnow(),
        first_seen=row.first_seen,
        last_seen=row.last_seen,
        details=details,
    )


def split(db: Database, root_id: int, signal: str, *, actor: Actor, gate: Gate) -> Split:
    """Split ``signal`` off incident ``root_id`` (see the module's docstring)."""
    with db.session() as session:
        root = session.get(Incident, root_id)
        decision = authorise_in(session, gate, actor, VERB, root_id, root)
        if isinstance(decision, Allowed):
            if root is None:
                raise SplitError(f"no incident {root_id} (see `guard incidents list`)")
            group = find_signal(session, root_id, signal)
            line = group_line(group)
            made = [_split_row(session, root, row, actor, decision) for row in group.rows]
            return Split(root_id, made[0], line, tuple(made))
    raise NotAuthorised(decision.reason)


def _split_row(
    session: Session, root: Incident, row: RelatedSignal, actor: Actor, decision: Allowed
) -> int:
    """One stored row off ``root``: its own open incident, the pair remembered; its id."""
    assert root.id is not None
    line = signal_line(row.kind, row.target, row.count)
    incident = _new_incident(row)
    session.add(incident)
    session.flush()
    assert incident.id is not None
    opened(
        session,
        incident,
        f"split off incident #{root.id} by {actor.name}: {row.message}",
        actor=actor.name,
        fingerprint=row.fingerprint,
        kind=row.kind,
        target=row.target,
        severity=row.severity,
        split_from=root.id,
    )
    record(
        session,
        root,
        "split",
        f"{line} split off by {actor.name}: now incident #{incident.id}",
        actor=actor.name,
        monitor=row.monitor_id,
        fingerprint=row.fingerprint,
        new_incident=incident.id,
        allowed=decision.by,
    )
    session.add(
        CorrelationSplit(
            root_monitor=root.monitor_id,
            root_fingerprint=root.fingerprint,
            monitor_id=row.monitor_id,
            fingerprint=row.fingerprint,
            incident_id=incident.id,
            by=actor.name,
            at=utcnow(),
        )
    )
    session.delete(row)
    return incident.id
