"""Playbook reload: apply the playbook files when they change, or say why they cannot be.

An invalid edit changes nothing that runs: it is logged and each broken file becomes a
``playbook_invalid`` signal on Guard itself; a valid one is applied and resolves those.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from loguru import logger

from guard.app.selfhealth import Put
from guard.domain.records import Observation
from guard.playbooks.loader import check_playbooks
from guard.playbooks.models import Playbook
from guard.playbooks.watch import PlaybooksDiff, PlaybookWatch, invalid_signal, valid_signal

Apply = Callable[[list[Playbook]], Awaitable[PlaybooksDiff]]
Audit = Callable[[str, dict[str, Any]], None]


class PlaybookReloader:
    """The playbook folder as last loaded, and what to do when it changes."""

    def __init__(self, folder: Path, apply: Apply, put: Put, audit: Audit) -> None:
        self.folder = folder
        self._apply = apply  # runs the new playbooks (``Guard.apply_playbooks``)
        self._put = put
        self._audit = audit
        self._watch = PlaybookWatch(folder)  # the files as they were loaded
        self._invalid: dict[Path, str] = {}  # playbook file -> its playbook_invalid message

    def valid_signals(self) -> Observation:
        """At start: an incident from an invalid edit before a restart resolves (these load)."""
        return Observation([valid_signal(p) for p in self._watch.files], {})

    async def reload(self) -> PlaybooksDiff | None:
        """Apply the playbook files if they changed since last seen (``playbooks_watch_every``)."""
        if not await asyncio.to_thread(self._watch.changed):
            return None
        folder = self.folder
        books, problems = await asyncio.to_thread(check_playbooks, folder)
        diff = None
        if not problems:
            try:
                diff = await self._apply(books)
            except Exception as exc:  # a monitor that cannot be built: nothing was changed
                logger.opt(exception=exc).error("could not apply the playbooks in {}", folder)
                problems = {folder: [f"{folder}: cannot apply: {type(exc).__name__}: {exc}"]}
        signals = [valid_signal(p) for p in self._invalid if p not in problems]
        failed = {path: invalid_signal(path, found) for path, found in problems.items()}
        # another problem in the same file: the old incident resolves, the new one opens
        moved = [p for p, s in failed.items() if self._invalid.get(p, s.message) != s.message]
        signals += [valid_signal(p) for p in moved]
        signals += [s for p, s in failed.items() if self._invalid.get(p) != s.message]
        self._invalid = {p: s.message for p, s in failed.items()}
        if signals:
            await self._put(Observation(signals, {}))
        if diff is None:
            logger.error(
                "playbooks in {} are invalid; Guard keeps the last good config: {}",
                folder,
                "; ".join(p for found in problems.values() for p in found),
            )
            return None
        logger.info("playbooks reloaded from {}: {}", folder, diff.as_dict())
        await asyncio.to_thread(self._audit, "playbooks.reloaded", diff.as_dict())
        return diff
