"""Redelivered alerts count once.

An alert that comes in through a hook (``guard.hooks``) carries a delivery key: Alertmanager's
and Grafana's fingerprint with the alert's ``startsAt``, or a webhook's ``dedup_key``. The keys
an incident has counted are kept on it (``details["deliveries"]``), in the same transaction as
its count, so the sender's retry of a notification Guard stored before answering, a repeat
notification (Alertmanager's ``repeat_interval``) or a group re-sent because another alert
joined it never adds to the count, across restarts too. A ``resolved`` alert only resolves an
incident whose last counted firing of that alert it ends (a late resolution of an earlier
firing leaves a newer one open).
"""

from __future__ import annotations

from typing import Any

from guard.records import Signal

KEEP = 200  # delivery keys kept per incident (the oldest go first)
DELIVERY = "delivery"  # the key's name in a signal's details
DELIVERIES = "deliveries"  # the counted keys' name in an incident's details


def delivery(sig: Signal) -> str | None:
    key = sig.details.get(DELIVERY)
    return str(key) if key else None


def counted(details: dict[str, Any], sig: Signal) -> bool:
    """Whether the incident with ``details`` has already counted this delivery of ``sig``."""
    key = delivery(sig)
    return key is not None and key in details.get(DELIVERIES, ())


def remember(details: dict[str, Any], sig: Signal) -> dict[str, Any]:
    """``details`` with ``sig``'s delivery key counted (a new dict: the column sees a change)."""
    key = delivery(sig)
    if key is None:
        return details
    kept = [k for k in details.get(DELIVERIES, ()) if k != key][-(KEEP - 1) :]
    return {**details, DELIVERIES: [*kept, key]}


def resolves(details: dict[str, Any], sig: Signal) -> bool:
    """Whether an ``ok`` ``sig`` may resolve the incident with ``details``: a signal without a
    delivery key always may; one with a key (``<alert>@<occurrence>``) only if it is the last
    occurrence of that alert the incident counted."""
    key = delivery(sig)
    if key is None or DELIVERIES not in details:
        return True
    alert = key.rpartition("@")[0] or key
    same = [k for k in details[DELIVERIES] if (k.rpartition("@")[0] or k) == alert]
    return bool(same) and same[-1] == key
