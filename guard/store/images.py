"""Which image each container ran before its current one, recorded when Guard saw it change.

``docker.rollback`` needs the previous image of a service; the engine forgets it the moment a
container is recreated. So each time a docker monitor reports a container (its ``image`` and
``image_id`` in the signal's details), ``note`` keeps, under the state key ``image:<name>``,
the current image and, once it differs from the one seen before, the previous one. It lives
in ``monitor_state`` (no new table: an older database needs no migration) and survives
restarts. Keyed by container name: a compose service's container keeps its name when it is
recreated, so this is the service's history too. Tested with the rollback:
tests/actions/test_docker_rollback.py.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from guard.domain.records import utcnow
from guard.store.state import get_state, put_state

PREFIX = "image:"


def note(session: Session, container: str, ref: str, image_id: str) -> bool:
    """Record that ``container`` runs ``image_id`` (tagged ``ref``); True when it changed."""
    key = PREFIX + container
    known = get_state(session, key)
    current = known.get("current") or {}
    if current.get("id") == image_id:
        return False
    value: dict[str, Any] = {"current": {"ref": ref, "id": image_id}}
    if current.get("id"):
        value["previous"] = current
        value["changed_at"] = utcnow().isoformat(timespec="seconds")
    elif known.get("previous"):
        value["previous"] = known["previous"]
    put_state(session, key, value)
    return bool(current.get("id"))


def history(session: Session, container: str) -> dict[str, Any]:
    """``{"current": {...}, "previous": {...}, "changed_at": ...}`` (``{}``: never seen)."""
    return get_state(session, PREFIX + container)
