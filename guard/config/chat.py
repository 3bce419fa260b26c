"""What every chat channel's settings section is: a ``ChatSection``, whose ``chat_id`` is the
default chat. The sections of a ``Settings`` that are ``ChatSection``s are its channels
(``channel_names``), the keys ``routes[].chats`` may use (``check_route_chats``).

A channel's section (``telegram``, ...) must be a ``ChatSection``; ``guard.notify.kinds.CHANNELS``
names the same channels (tests/config/test_chat.py holds them to it).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from guard.config.validators import Section


class ChatSection(Section):
    """A chat channel's settings: at least a default chat."""

    chat_id: int | str | None = None

    @property
    def configured(self) -> bool:
        """Whether the channel runs (a channel with a token says: a token and a chat)."""
        return self.chat_id is not None


def channel_names(settings: BaseModel) -> list[str]:
    """The chat channels ``settings`` has a section for, in field order."""
    return [
        name
        for name in type(settings).model_fields
        if isinstance(getattr(settings, name, None), ChatSection)
    ]


def check_route_chats(settings: Any) -> None:
    """Every ``routes[i].chats`` key names a chat channel (a ``ChatSection`` of ``settings``)."""
    names = channel_names(settings)
    for i, route in enumerate(settings.routes):
        for key in route.chats:
            if key not in names:
                raise ValueError(
                    f"routes[{i}].chats.{key}: not a chat channel; channels: {', '.join(names)}"
                )
