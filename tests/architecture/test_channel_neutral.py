"""A chat channel is one folder, one table entry and one settings class (issue 44): outside
``guard/notify/telegram/`` and ``guard/config/``, no module of ``guard/`` names Telegram
(``grep -rlin telegram guard --include=*.py``), in code or in words. Two lines are allowed:
the ``CHANNELS`` entry in ``guard/notify/kinds.py``, and the redactor's rule for the bot
token's shape in ``guard/redact/rules.py`` (a secret shape is named by its issuer, like the
Slack, Discord and Stripe rules beside it, and is masked whether or not the channel is
configured: a token in a watched app's log is a secret all the same)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit

CHANNEL = re.compile("telegram", re.IGNORECASE)
FOLDERS = ("guard/config/", "guard/notify/telegram/")
ALLOWED_LINES = {
    "guard/notify/kinds.py": re.compile(
        r'^    "telegram": ChannelKind\(cfg\.TelegramSettings, "guard\.notify\.telegram"\),$'
    ),
    "guard/redact/rules.py": re.compile(r'^        "telegram-bot-token",$'),
}


def naming(root: Path) -> dict[str, list[str]]:
    """The files under ``root/guard`` (outside the channel's folder and config/) that name
    Telegram, with the lines that do and are not allowed."""
    found: dict[str, list[str]] = {}
    for path in sorted((root / "guard").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(FOLDERS) or "__pycache__" in path.parts:
            continue
        allowed = ALLOWED_LINES.get(rel)
        lines = [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if CHANNEL.search(line) and not (allowed and allowed.match(line))
        ]
        if lines:
            found[rel] = lines
    return found


def test_no_module_outside_the_channel_folder_and_config_names_telegram() -> None:
    found = naming(REPO)
    assert not found, (
        "these modules name Telegram outside guard/notify/telegram/ and guard/config/; move "
        "the dependency behind the port (guard/notify/kinds.py's CHANNELS, the channel's "
        "folder, its settings) or word it channel-neutrally (docs/CHANNELS.md):\n"
        + "\n".join(f"{rel}: {line.strip()}" for rel, lines in found.items() for line in lines)
    )


def test_the_check_sees_a_mention_in_a_docstring_and_a_second_line_in_the_table(
    tmp_path: Path,
) -> None:
    kinds = tmp_path / "guard" / "notify" / "kinds.py"
    kinds.parent.mkdir(parents=True)
    entry = '    "telegram": ChannelKind(cfg.TelegramSettings, "guard.notify.telegram"),'
    kinds.write_text(f"CHANNELS = {{\n{entry}\n}}\n")
    (tmp_path / "guard" / "notify" / "telegram").mkdir()
    (tmp_path / "guard" / "notify" / "telegram" / "gateway.py").write_text("# Telegram\n")
    (tmp_path / "guard" / "config").mkdir()
    (tmp_path / "guard" / "config" / "chat.py").write_text("TelegramSettings = 1\n")
    assert naming(tmp_path) == {}
    kinds.write_text(f"from x import TelegramSettings\nCHANNELS = {{\n{entry}\n}}\n")
    (tmp_path / "guard" / "labels.py").write_text('"""As in Telegram\'s markup."""\n')
    assert naming(tmp_path) == {
        "guard/labels.py": ['"""As in Telegram\'s markup."""'],
        "guard/notify/kinds.py": ["from x import TelegramSettings"],
    }
