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

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from guard.domain.records import utcnow
from guard.store.state import get_state, get_states, put_states

PREFIX = "image:"


def note(session: Session, seen: Mapping[str, tuple[str, str]]) -> list[str]:
    """Record that each container runs ``(ref, image_id)``; the names whose image changed. A
    first poll of 200 containers is two reads and two writes (``get_states``/``put_states``)."""
    known = get_states(session, (PREFIX + name for name in seen))
    changed: list[str] = []
    writes: dict[str, dict[str, Any]] = {}
    for name, (ref, image_id) in seen.items():
        before = known[PREFIX + name]
        current = before.get("current") or {}
        if current.get("id") == image_id:
            continue
        value: dict[str, Any] = {"current": {"ref": ref, "id": image_id}}
        if current.get("id"):
            value["previous"] = current
            value["changed_at"] = utcnow().isoformat(timespec="seconds")
            changed.append(name)
        elif before.get("previous"):
            value["previous"] = before["previous"]
        writes[PREFIX + name] = value
    if writes:
        put_states(session, writes)
    return changed


def history(session: Session, container: str) -> dict[str, Any]:
    """``{"current": {...}, "previous": {...}, "changed_at": ...}`` (``{}``: never seen)."""
    return get_state(session, PREFIX + container)
