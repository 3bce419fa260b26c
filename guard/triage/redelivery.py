"""Redelivered alerts count once; an incident of several alerts resolves with the last of them.

An alert that comes in through a hook (``guard.hooks``) carries a delivery key,
``<alert>@<occurrence>``: Alertmanager's and Grafana's fingerprint with the alert's
``startsAt``, or a webhook's ``dedup_key``. An incident keeps the keys it counted
(``details["deliveries"]``) and the alerts of it still firing (``details["firing"]``), in the
same transaction as its count. So:

- the sender's retry of a notification Guard stored before answering, a repeat notification
  (Alertmanager's ``repeat_interval``) or a group re-sent because another alert joined it never
  adds to the count, across restarts too, and never reopens a resolved incident;
- the same alert firing again later (a new occurrence) counts, and reopens;
- a ``resolved`` alert ends only the occurrence it names (a late resolution of an earlier
  firing leaves a newer one open), and an incident of several alerts (``group_by``) resolves
  once none of them fires.

A signal may also carry the time its sender signed (``signed_at``: a hook's
``hmac_timestamp_header``), which orders episodes even without a key (a webhook without
``dedup_key``, or one whose key is reused episode after episode): an incident remembers the
latest signed time it took (``details["episode_at"]``), and a ``resolved`` signed before it
ends nothing, nor does a keyless firing signed before it count or reopen (both are an earlier
episode's, delayed or replayed).

Signals without a key or a signed time (every monitor's) are untouched by all of this.
"""

from __future__ import annotations

from typing import Any

from guard.domain.records import Signal

KEEP = 200  # delivery keys (and firing alerts) kept per incident; the oldest go first
DELIVERY = "delivery"  # the key's name in a signal's details
DELIVERIES = "deliveries"  # the counted keys' name in an incident's details
FIRING = "firing"  # the alerts of the incident that fire
SIGNED_AT = "signed_at"  # the sender's signed time in a signal's details (guard.hooks)
EPISODE_AT = "episode_at"  # the latest signed time an incident took, in its details


def delivery(sig: Signal) -> str | None:
    key = sig.details.get(DELIVERY)
    return str(key) if key else None


def signed_at(sig: Signal) -> float | None:
    at = sig.details.get(SIGNED_AT)
    return float(at) if isinstance(at, int | float) else None


def _alert(key: str) -> str:
    return key.rpartition("@")[0] or key


def _earlier(details: dict[str, Any], sig: Signal) -> bool:
    """Whether ``sig`` was signed before the latest episode the incident took."""
    at, episode = signed_at(sig), details.get(EPISODE_AT)
    return at is not None and isinstance(episode, int | float) and at < episode


def counted(details: dict[str, Any], sig: Signal) -> bool:
    """Whether the incident with ``details`` has already counted this delivery of ``sig``
    (or, for a keyless signal, an episode signed after it)."""
    key = delivery(sig)
    if key is None:
        return _earlier(details, sig)
    return key in details.get(DELIVERIES, ())


def remember(details: dict[str, Any], sig: Signal) -> dict[str, Any]:
    """``details`` with ``sig``'s delivery counted and its alert firing, and its signed time
    as the latest episode (a new dict: the column sees the change)."""
    at = signed_at(sig)
    if at is not None and not _earlier(details, sig):
        details = {**details, EPISODE_AT: at}
    key = delivery(sig)
    if key is None:
        return details
    kept = [k for k in details.get(DELIVERIES, ()) if k != key][-(KEEP - 1) :]
    firing = [a for a in details.get(FIRING, ()) if a != _alert(key)][-(KEEP - 1) :]
    return {**details, DELIVERIES: [*kept, key], FIRING: [*firing, _alert(key)]}


def settle(details: dict[str, Any], sig: Signal) -> tuple[dict[str, Any], bool]:
    """An ``ok`` ``sig`` on the incident with ``details``: its details after it, and whether
    the incident resolves. Without a key it does; with one, only if it ends the last counted
    occurrence of its alert and no other alert of the incident still fires; signed before the
    incident's latest episode, never."""
    if _earlier(details, sig):
        return details, False
    key = delivery(sig)
    if key is None or DELIVERIES not in details:
        return details, True
    same = [k for k in details[DELIVERIES] if _alert(k) == _alert(key)]
    if not same or same[-1] != key:
        return details, False
    firing = [a for a in details.get(FIRING, ()) if a != _alert(key)]
    return {**details, FIRING: firing}, not firing
