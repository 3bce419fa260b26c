"""Every chat channel's section is a ``ChatSection``: the names ``routes[].chats`` may use."""

from __future__ import annotations

import pytest

from guard.config import Settings
from guard.config.chat import ChatSection, channel_names
from guard.notify.kinds import CHANNELS


@pytest.mark.unit
def test_every_channel_of_the_table_has_a_chat_section_and_only_they() -> None:
    s = Settings()
    assert channel_names(s) == list(CHANNELS)
    for name, kind in CHANNELS.items():
        assert issubclass(kind.settings, ChatSection), name
