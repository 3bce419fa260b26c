"""Pagers and webhooks, through a durable page outbox (``guard.store.paging``).

``enqueue_pages`` queues one event per target in the caller's transaction (so it commits, or
not, with whatever decided to page); the ``PageWorker`` in ``guard run`` delivers them
(``guard.notify.pagers.worker``), in order per target, with retries and backoff. A page is
delivered at least once and acted on once: PagerDuty deduplicates by the incident's stable
``dedup_key`` (``guard-incident-<id>``), a webhook receiver by the ``X-Guard-Delivery`` id.

``triggered_targets`` says which targets hold an open page for an incident (a ``trigger`` and
no ``resolve`` after it): where an acknowledgement or a resolution must go.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from guard import cluster
from guard.store.models import Incident
from guard.store.paging import PageOutbox

PageAction = Literal["trigger", "acknowledge", "resolve"]
ACTIONS: tuple[PageAction, ...] = ("trigger", "acknowledge", "resolve")
MESSAGE_LIMIT = 1000  # characters of the incident's message in a page


def dedup_key(incident_id: int) -> str:
    """PagerDuty's ``dedup_key`` for an incident: every event about it names one alert."""
    return f"guard-incident-{incident_id}"


def snapshot(incident: Incident) -> dict[str, Any]:
    """What a page says about an incident (stored with the row; redacted like every row)."""
    details = incident.details or {}
    alert = details.get("alert") if isinstance(details.get("alert"), dict) else {}
    link = (alert or {}).get("generatorURL")
    return {
        "incident_id": incident.id,
        "title": incident.title,
        "severity": incident.severity,
        "state": str(incident.state),
        "target": incident.target,
        "kind": incident.kind,
        "monitor_id": incident.monitor_id,
        "service": details.get("service"),
        "count": incident.count,
        "message": (incident.message or "")[:MESSAGE_LIMIT],
        "opened_at": incident.opened_at.isoformat() if incident.opened_at else None,
        "link": link if isinstance(link, str) and link else None,
        "commands": {
            "show": f"guard incidents show {incident.id}",
            "ack": f"guard ack {incident.id}",
        },
    }


def enqueue_pages(
    session: Session,
    targets: Sequence[str],
    incident: Incident,
    action: PageAction,
    *,
    key: str,
    reason: str = "",
) -> list[int]:
    """Queue ``action`` about ``incident`` to each target, in ``session``'s transaction.

    ``(target, key)`` is unique: a target that already has a row with ``key`` is skipped, so
    re-enqueueing is a no-op. Returns the new rows' ids (empty for duplicates)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown page action {action!r}; one of {', '.join(ACTIONS)}")
    assert incident.id is not None
    wanted = list(dict.fromkeys(targets))  # a target named twice: paged once
    if not wanted:
        return []
    have = set(
        session.exec(
            select(PageOutbox.target).where(
                PageOutbox.key == key, col(PageOutbox.target).in_(wanted)
            )
        ).all()
    )
    body = snapshot(incident)
    queued: list[int] = []
    for row in (
        PageOutbox(
            target=t,
            key=key,
            incident_id=incident.id,
            action=action,
            reason=reason,
            payload=body,
        )
        for t in wanted
        if t not in have
    ):
        try:
            with session.begin_nested():  # another transaction queued it meanwhile: a no-op
                session.add(row)
        except IntegrityError:
            continue
        assert row.id is not None
        cluster.current().claim(session, "page.queue", row.id)  # only the leader pages
        queued.append(row.id)
    return queued


def triggered_targets(session: Session, incident_id: int) -> list[str]:
    """Targets that got a ``trigger`` for this incident and no ``resolve`` after it."""
    last = (
        select(PageOutbox.target, PageOutbox.action, func.max(PageOutbox.id))
        .where(
            PageOutbox.incident_id == incident_id,
            col(PageOutbox.action).in_(("trigger", "resolve")),
        )
        .group_by(col(PageOutbox.target), col(PageOutbox.action))
    )
    newest: dict[str, dict[str, int]] = {}
    for target, action, row_id in session.exec(last).all():
        newest.setdefault(target, {})[action] = int(row_id or 0)
    return sorted(
        t
        for t, acts in newest.items()
        if "trigger" in acts and acts["trigger"] > acts.get("resolve", 0)
    )


__all__ = ["ACTIONS", "PageAction", "dedup_key", "enqueue_pages", "snapshot", "triggered_targets"]
