"""Recording each watched container's image as the monitors report it (``guard.store.images``).

Wraps the runner's ``put``, after it (recording never delays or reorders what triage sees):
every observation's docker signals carry ``image`` and ``image_id``; a container seen with the
same image as last time costs a dict lookup, and the store is written only when it is first
seen in this process or its image changed, so ``docker.rollback`` knows the previous image of
a service after a deploy, across restarts (tests/actions/test_docker_rollback.py).
"""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.app.selfhealth import Put
from guard.domain.records import Observation
from guard.store import images
from guard.store.db import Database


class ImageHistory:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._seen: dict[str, str] = {}  # container -> image id, as last recorded

    def wrap(self, put: Put) -> Put:
        """``put`` that records the images in an observation before handing it on."""

        async def recording(obs: Observation) -> None:
            await put(obs)  # first: recording never delays nor reorders what triage sees
            changed = self.changes(obs)
            if changed:
                await asyncio.to_thread(self.record, changed)

        return recording

    def changes(self, obs: Observation) -> dict[str, tuple[str, str]]:
        found: dict[str, tuple[str, str]] = {}
        for sig in obs.signals:
            image_id = sig.details.get("image_id") if sig.source == "docker" else None
            if image_id and self._seen.get(sig.target) != image_id:
                found[sig.target] = (str(sig.details.get("image") or image_id), str(image_id))
        return found

    def record(self, changed: dict[str, tuple[str, str]]) -> None:
        with self.db.session() as session:
            for name in images.note(session, changed):
                logger.info(
                    "container {} changed image to {}; previous kept", name, changed[name][0]
                )
        for name, (_ref, image_id) in changed.items():
            self._seen[name] = image_id
