"""Every chat channel's section is a ``ChatSection``: the names ``routes[].chats`` may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.config import Settings, load_settings
from guard.config.chat import ChatSection, channel_names
from guard.domain.exceptions import ConfigError
from guard.notify.kinds import CHANNELS


@pytest.mark.unit
def test_every_channel_of_the_table_has_a_chat_section_and_only_they() -> None:
    s = Settings()
    assert channel_names(s) == list(CHANNELS)
    for name, kind in CHANNELS.items():
        assert issubclass(kind.settings, ChatSection), name


# -- chat: the settings that mean the same on every channel ---------------------------------


def _sections(s: Settings, key: str) -> dict[str, float]:
    return {name: getattr(getattr(s, name), key) for name in channel_names(s)}


@pytest.mark.unit
def test_chat_gives_every_channel_its_group_wait_and_mute_for(tmp_path: Path) -> None:
    s = load(tmp_path, "chat: {group_wait: 30s, mute_for: 2h}\n")
    assert set(_sections(s, "group_wait").values()) == {30.0}
    assert set(_sections(s, "mute_for").values()) == {7200.0}


@pytest.mark.unit
def test_a_channels_own_value_overrides_chat(tmp_path: Path) -> None:
    s = load(tmp_path, "chat: {group_wait: 30s}\ntelegram: {group_wait: 0s}\n")
    assert s.telegram.group_wait == 0.0 and s.slack.group_wait == 30.0
    assert s.email.group_wait == 30.0 and s.matrix.group_wait == 30.0


@pytest.mark.unit
def test_without_chat_each_channel_keeps_its_own_default(tmp_path: Path) -> None:
    s = load(tmp_path, "telegram: {mute_for: 5m}\n")
    assert s.telegram.group_wait == 10.0 and s.email.group_wait == 0.0  # as before
    assert s.telegram.mute_for == 300.0 and s.slack.mute_for == 3600.0


@pytest.mark.unit
def test_an_unknown_chat_key_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load(tmp_path, "chat: {groupwait: 30s}\n")
    assert "chat.groupwait" in str(exc.value)


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "guard.yaml"
    path.write_text(f"data_dir: {tmp_path}\n{text}")
    return load_settings(path)
