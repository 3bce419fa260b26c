"""``chat:`` holds what means the same on every chat channel: given only there, ``group_wait``
groups questions on Telegram and Slack alike (each against its local server, through the
runners ``guard run`` starts); a channel's own value overrides it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from guard.config import load_settings
from guard.notify import build_notifier, build_runners
from guard.notify.base import HumanRequest
from guard.store.db import open_database
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, CHANNEL, SlackServer
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import stored_incident
from tests.helpers.telegram import CHAT, TOKEN

pytestmark = pytest.mark.unit


async def asked_three(tmp_path: Path, **config: Any) -> tuple[list[str], list[str], list[int]]:
    """Three questions asked at once through both channels; what each server shows, in order
    (Telegram's texts, Slack's messages as text) and the incidents' ids."""
    own = config.pop("telegram", {})
    tg, slack = TelegramServer(TOKEN).start(), SlackServer().start()
    try:
        channels = {
            "telegram": {"bot_token": TOKEN, "chat_id": CHAT, "api_base_url": tg.url, **own},
            "slack": {"bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "channel": CHANNEL},
        }
        channels["slack"]["api_base_url"] = slack.url
        path = tmp_path / "guard.yaml"  # a real config file, as an operator writes one
        path.write_text(yaml.safe_dump({"data_dir": str(tmp_path), **config, **channels}))
        settings = load_settings(path)
        db = open_database(settings.database_url)
        with db.session() as session:
            ids = [
                stored_incident(session, "awaiting_human", title=f"fault {i}").id for i in (1, 2, 3)
            ]
        notifier, runners = build_notifier(settings, db), build_runners(settings, db)
        for runner in runners:
            await runner.start()
        try:
            for i in ids:
                await notifier.ask(HumanRequest(i, f"fault {i}", "error", "api", 1, ""))
            for _ in range(300):  # the first at once; the rest once the window ends
                await asyncio.sleep(0.1)
                texts = [
                    m["text"] for m in sorted(tg.bot_messages(), key=lambda m: m["message_id"])
                ]
                posts = [str(c["params"]) for c in slack.sent()]
                if "#3" in "".join(texts) and "#3" in "".join(posts):
                    await asyncio.sleep(0.5)
                    return texts, posts, ids
            raise AssertionError(f"not every question asked: {texts} {posts}")
        finally:
            for runner in runners:
                await runner.stop()
    finally:
        tg.stop()
        slack.stop()


async def test_chat_group_wait_alone_groups_on_telegram_and_slack_alike(tmp_path: Path) -> None:
    texts, posts, ids = await asked_three(tmp_path, chat={"group_wait": "2s"})
    for shown in (texts, posts):
        assert len(shown) == 2, shown  # the first alone, then the other two as one message
        assert f"#{ids[0]}" in shown[0] and f"#{ids[2]}" not in shown[0]
        assert f"#{ids[1]}" in shown[1] and f"#{ids[2]}" in shown[1]


async def test_a_channels_own_group_wait_overrides_chat(tmp_path: Path) -> None:
    texts, posts, _ = await asked_three(
        tmp_path, chat={"group_wait": "2s"}, telegram={"group_wait": "0s"}
    )
    assert len(texts) == 3 and len(posts) == 2  # Telegram never groups; Slack still does
