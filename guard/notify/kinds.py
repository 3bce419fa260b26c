"""Chat channels: one entry per channel says where everything Guard needs of it lives.

A ``ChannelKind`` is its settings class (the section ``settings.<name>``, whose ``configured``
says whether the channel runs) and its folder, a package whose ``plug`` module gives the port's
parts (``ChannelPlug``): the outbox ``Channel``, its ``Markup``, the notifier that queues its
questions, the inbound adapter (what a person did, as a neutral ``guard.notify.inbound.Inbound``)
and the runner ``guard run`` starts. The folder is imported only when one of them is used (a
channel's SDK costs start-up time), so importing this table loads no channel.

``CHANNELS`` holds the built-in channels; the notifier, ``guard run``'s runners, the markups of
the outbox's edits and the settings checks all read it; nothing else branches on a channel's
name. Adding a channel: one folder, one entry here, one settings class (docs/CHANNELS.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from guard import config as cfg
from guard.config import Settings
from guard.config.chat import ConsoleSettings
from guard.config.validators import Section

if TYPE_CHECKING:
    from guard.notify.base import Notifier
    from guard.notify.channel import Channel, Markup
    from guard.notify.inbound import Inbound
    from guard.ports.running import HealthSource
    from guard.store.db import Database


class Runner(Protocol):
    """What ``guard run`` keeps going for a channel: its outbox worker, its inbound side."""

    async def start(self) -> None:
        """Start in the background; never raises for the channel being unreachable."""
        ...

    async def stop(self) -> None: ...


class ChannelPlug(Protocol):
    """A channel folder's ``plug`` module."""

    def channel(self, settings: Settings) -> Channel:
        """The outbox's channel for the configured section."""
        ...

    def markup(self) -> Markup: ...

    def notifier(self, settings: Settings, db: Database, router: Any) -> Notifier:
        """Its notifier, asking in the chats ``router`` (a ``Router``, or None) names."""
        ...

    def inbound(self, update: Any) -> Inbound | None:
        """What a person did in the channel, as a neutral event (None: nothing to act on)."""
        ...

    def runner(self, settings: Settings, db: Database, runtime: HealthSource | None) -> Runner: ...

    def report(self, settings: Settings, db: Database, text: str, png: bytes) -> str:
        """Queue the daily report (its text, then its chart); say where it goes."""
        ...


@dataclass(frozen=True)
class ChannelKind:
    """One chat channel: its settings section and the folder that implements it."""

    settings: type[Section]
    package: str

    def plug(self) -> ChannelPlug:
        """The folder's parts (imported now, not before)."""
        return cast(ChannelPlug, importlib.import_module(f"{self.package}.plug"))


CHANNELS: dict[str, ChannelKind] = {
    "telegram": ChannelKind(cfg.TelegramSettings, "guard.notify.telegram"),
    "email": ChannelKind(cfg.EmailSettings, "guard.notify.email"),
    "slack": ChannelKind(cfg.SlackSettings, "guard.notify.slack"),
    "matrix": ChannelKind(cfg.MatrixSettings, "guard.notify.matrix"),
    "console": ChannelKind(ConsoleSettings, "guard.notify.console"),
}
"""Channel name (its settings section, and the ``channel`` of its outbox rows) -> kind."""
FALLBACK = "console"
"""The channel Guard asks on when no channel is configured."""


def section(settings: Settings, name: str) -> Any:
    """The settings section of channel ``name`` (``settings.<name>``)."""
    return getattr(settings, name)


def configured(settings: Settings) -> list[str]:
    """The channels whose section is configured, in table order."""
    return [name for name in CHANNELS if bool(section(settings, name).configured)]


def active(settings: Settings) -> list[str]:
    """The channels Guard asks on: the configured ones, or ``FALLBACK`` when none is."""
    return configured(settings) or [FALLBACK]


def markup_maker(name: str) -> Callable[[], Markup] | None:
    """How to make channel ``name``'s markup (None: not a channel of the table)."""
    kind = CHANNELS.get(name)
    return None if kind is None else lambda: kind.plug().markup()


def chat_setting(settings: Settings, field: str) -> Any:
    """A setting every channel section has (``mute_for``, ``group_wait``), as the first
    channel Guard asks on says (``chat:`` gives them all one value, ``use_chat_settings``)."""
    return getattr(section(settings, active(settings)[0]), field)
