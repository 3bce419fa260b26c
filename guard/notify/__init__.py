"""Notifiers: the Notifier port, the channel-neutral outbox behind it, and its channels.

``build_notifier`` returns a ``FanOut`` over every configured channel of the ``CHANNELS``
table (``guard.notify.kinds``; their questions go to the chats ``routes:`` name) and, when a
route names pagers or webhooks, the ``PagerNotifier`` that queues their pages
(``guard.notify.pagers``); with no channel configured, the console (a channel of the table,
``guard.notify.console``) takes the channel's place.
``build_runners`` returns the configured channels' runners for ``guard run``,
``build_page_worker`` the page outbox's worker (or None). ``guard.notify.pipeline`` puts them
together with routing, quiet hours and escalation: ``guard.app`` builds the pipeline there,
nowhere else. A channel's modules are imported only when it is configured (they cost start-up
time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guard.notify.base import HumanRequest, IncidentUpdate, Notifier, SkillOption

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.kinds import Runner
    from guard.notify.pagers.worker import PageWorker
    from guard.notify.routing import Router
    from guard.ports.running import HealthSource
    from guard.store.db import Database


def channel_notifiers(
    settings: Settings, db: Database, router: Router | None = None
) -> list[Notifier]:
    """A notifier per chat channel Guard asks on (the console when none is configured)."""
    from guard.notify.kinds import CHANNELS, active

    return [CHANNELS[name].plug().notifier(settings, db, router) for name in active(settings)]


def pages_configured(settings: Settings) -> bool:
    """Whether any route names a pager or webhook."""
    return any(r.notify for r in settings.routes)


def build_notifier(settings: Settings, db: Database, router: Router | None = None) -> Notifier:
    """Every configured channel, routed by ``router`` (default: ``Router(settings)``), and the
    pagers when routes name some."""
    from guard.notify.routing import Router

    router = router or Router(settings)
    found = channel_notifiers(settings, db, router)
    if pages_configured(settings):
        from guard.notify.pagers.notifier import PagerNotifier

        found.append(PagerNotifier(db, router))
    if len(found) == 1:
        return found[0]
    from guard.notify.fanout import FanOut

    return FanOut(found)


def build_runners(
    settings: Settings, db: Database, runtime: HealthSource | None = None
) -> list[Runner]:
    """What ``guard run`` starts for each channel Guard asks on (its gateway, or worker)."""
    from guard.notify.kinds import CHANNELS, active

    return [CHANNELS[name].plug().runner(settings, db, runtime) for name in active(settings)]


def build_page_worker(settings: Settings, db: Database) -> PageWorker | None:
    """The page outbox's worker when notifiers are configured (``guard run``, the leader)."""
    if not settings.notifiers.names():
        return None
    from guard.notify.pagers.worker import PageWorker

    return PageWorker(settings, db)


__all__ = [
    "HumanRequest",
    "IncidentUpdate",
    "Notifier",
    "SkillOption",
    "build_notifier",
    "build_page_worker",
    "build_runners",
]
