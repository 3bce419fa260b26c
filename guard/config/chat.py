"""What every chat channel's settings section is: a ``ChatSection``, whose ``chat_id`` is the
default chat. The sections of a ``Settings`` that are ``ChatSection``s are its channels
(``channel_names``), the keys ``routes[].chats`` may use (``check_route_chats``).

A channel's section (``telegram``, ...) must be a ``ChatSection``; ``guard.notify.kinds.CHANNELS``
names the same channels (tests/config/test_chat.py holds them to it). ``console`` is Guard's own
log (``ConsoleSettings``): the channel when no other is configured.

``chat:`` (``ChatSettings``) holds the settings that mean the same on every channel; a channel
reads ``chat.X`` unless its own section sets ``X`` (``use_chat_settings``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from guard.config.validators import Section
from guard.domain.durations import Duration

GROUP_WAIT_HELP = (
    "incidents announced within this long of the last announcement go out together, as one "
    "message with a line per incident (0: never)"
)


class ChatSection(Section):
    """A chat channel's settings: at least a default chat."""

    chat_id: int | str | None = None

    @property
    def configured(self) -> bool:
        """Whether the channel runs (a channel with a token says: a token and a chat)."""
        return self.chat_id is not None


class ConsoleSettings(ChatSection):
    """The console: questions are written to Guard's log (and answered with ``guard approve``,
    ``deny``, ``reply``), through the outbox like any channel."""

    chat_id: int | str | None = "console"
    always: bool = Field(
        default=False,
        description="ask on the console also when another chat channel is configured (it is "
        "the channel when none is)",
    )
    allowed_user_ids: list[str] = Field(
        default_factory=list, description="console operators' names allowed to answer"
    )
    mute_for: Duration = Field(default=3600.0, description="how long `guard mute` mutes")
    group_wait: Duration = Field(default=10.0, description=GROUP_WAIT_HELP)

    @property
    def configured(self) -> bool:
        """Asked on beside the other channels (``always``); alone, it is asked on anyway."""
        return self.always


class ChatSettings(Section):
    """The settings that mean the same on every chat channel (``chat:``): each channel reads
    them unless its own section sets them. Unset, each channel keeps its own default."""

    mute_for: Duration | None = Field(
        default=None, description="how long a mute (button, reaction, command) mutes"
    )
    group_wait: Duration | None = Field(default=None, description=GROUP_WAIT_HELP)


def channel_names(settings: BaseModel) -> list[str]:
    """The chat channels ``settings`` has a section for, in field order."""
    return [
        name
        for name in type(settings).model_fields
        if isinstance(getattr(settings, name, None), ChatSection)
    ]


def use_chat_settings(settings: Any) -> None:
    """Give each channel section the ``chat:`` values its own section does not set."""
    chat: ChatSettings = settings.chat
    given = {key: getattr(chat, key) for key in ChatSettings.model_fields}
    for name in channel_names(settings):
        section = getattr(settings, name)
        for key, value in given.items():
            if value is not None and key not in section.model_fields_set:
                setattr(section, key, value)


def check_route_chats(settings: Any) -> None:
    """Every ``routes[i].chats`` key names a chat channel (a ``ChatSection`` of ``settings``)."""
    names = channel_names(settings)
    for i, route in enumerate(settings.routes):
        for key in route.chats:
            if key not in names:
                raise ValueError(
                    f"routes[{i}].chats.{key}: not a chat channel; channels: {', '.join(names)}"
                )
