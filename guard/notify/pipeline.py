"""The notification pipeline, assembled by one function: ``build_pipeline``.

What tells people about incidents is one chain, built here and nowhere else: the ``Router``
(``routes:``), the fan-out over every configured channel of ``CHANNELS`` (each asking in the
chats its routes name, related signals edited into its questions) and the ``PagerNotifier``
when routes name pagers (``build_notifier``), quiet hours around it (``wrap_quiet``; the agent
asks through ``asking``), each channel's runner (receiving, its outbox worker), the page
outbox's worker, and the leader's jobs: escalation steps and reminders, and the release of the
questions quiet hours held. ``guard.app`` builds one ``Pipeline`` per Guard and takes each part
from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from guard.config import Settings
from guard.notify import build_notifier, build_page_worker, build_runners
from guard.notify.base import Notifier
from guard.notify.kinds import chat_setting
from guard.notify.quiet import QuietNotifier, release_held, wrap_quiet
from guard.notify.routing import Router
from guard.store.db import Database

if TYPE_CHECKING:
    from guard.notify.kinds import Runner
    from guard.notify.pagers.worker import PageWorker
    from guard.ports.running import HealthSource

Job = Callable[[], Awaitable[Any]]
ASK_EVERY = 2.0  # seconds between looks for a promotion to put to an admin


@dataclass
class Pipeline:
    """The assembled parts (``build_pipeline``); runners, page worker and jobs are made when
    ``guard run`` asks for them."""

    settings: Settings
    db: Database
    router: Router
    notifier: Notifier
    """The fan-out over the channels and pagers."""
    quiet: QuietNotifier | None
    """Quiet hours around ``notifier`` (None: none configured)."""

    @property
    def asking(self) -> Notifier:
        """What the agent asks through: quiet hours hold only the asking."""
        return self.notifier if self.quiet is None else self.quiet

    @property
    def mute_for(self) -> float:
        """How long a mute button mutes (the chat's setting)."""
        return float(chat_setting(self.settings, "mute_for"))

    def runners(self, runtime: HealthSource | None) -> list[Runner]:
        """Each configured channel's runner."""
        return build_runners(self.settings, self.db, runtime)

    def page_worker(self) -> PageWorker | None:
        """The page outbox's worker (None: no notifiers configured)."""
        return build_page_worker(self.settings, self.db)

    async def release_held(self) -> list[int]:
        """Ask the questions quiet hours held once they may be asked."""
        return await release_held(self.quiet)

    def jobs(self) -> dict[str, tuple[Job, float]]:
        """The leader's periodic jobs: job id -> (job, every how many seconds; 0: never)."""
        from guard.notify.escalation import Escalator

        s = self.settings
        every = s.escalation.check_every
        return {
            "escalation:tick": (Escalator(s, self.db).run, every if s.escalation.active else 0),
            "quiet:release": (self.release_held, every if s.quiet_hours is not None else 0),
            "skills:promotion": (self.ask_promotions, 0 if s.skills.git_remote else ASK_EVERY),
        }

    async def ask_promotions(self) -> None:
        """Put proposed promotions to an admin, with no git remote (``notify.promotionask``)."""
        from guard.notify.promotionask import tend

        await asyncio.to_thread(tend, self.db, self.settings, self.notifier)


def build_pipeline(settings: Settings, db: Database) -> Pipeline:
    """The one place the notification pipeline is put together."""
    router = Router(settings)
    notifier = build_notifier(settings, db, router)
    return Pipeline(settings, db, router, notifier, wrap_quiet(notifier, settings, db))
