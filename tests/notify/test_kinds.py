"""The ``CHANNELS`` table (``guard.notify.kinds``): the notifier, ``guard run``'s runners and
the gate read it; a channel's folder loads only when it is used; Telegram's entry (its
``plug``) posts through the local Bot API server and turns an update into a neutral event."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from telegram import Update

from guard.config import Settings, TelegramSettings
from guard.incidents.gate import Actor, Allowed, Refused
from guard.notify import build_notifier, build_runners
from guard.notify.channel import Post
from guard.notify.console import ConsoleNotifier, ConsoleRunner
from guard.notify.kinds import CHANNELS, active, chat_setting, configured
from guard.notify.running_gate import gate_from_settings
from guard.store.db import open_database
from tests.fakes.telegram import TelegramServer
from tests.helpers.telegram import ADMIN, CHAT, STRANGER, TOKEN

pytestmark = pytest.mark.unit


def settings_for(tmp_path: Path, telegram: TelegramSettings | None = None) -> Settings:
    return Settings(
        data_dir=tmp_path,
        skills_dir=tmp_path / "skills",
        playbooks_dir=tmp_path / "playbooks",
        telegram=telegram or TelegramSettings(),
    )


def telegram_on(url: str) -> TelegramSettings:
    return TelegramSettings(
        bot_token=SecretStr(TOKEN),
        chat_id=CHAT,
        allowed_user_ids=[ADMIN],
        api_base_url=url,
        mute_for=120,
        group_wait=3,
    )


def test_every_entry_is_a_settings_section_of_its_class() -> None:
    for name, kind in CHANNELS.items():
        assert Settings.model_fields[name].annotation is kind.settings
        assert hasattr(kind.settings(), "configured")


def test_nothing_configured_the_console_asks_and_its_worker_runs(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    db = open_database(settings.database_url)
    assert configured(settings) == [] and active(settings) == ["console"]
    assert isinstance(build_notifier(settings, db), ConsoleNotifier)
    assert [type(r) for r in build_runners(settings, db)] == [ConsoleRunner]  # its outbox worker
    assert chat_setting(settings, "mute_for") == 3600.0  # the console's default


def test_telegram_configured_its_notifier_runner_and_gate_come_from_the_table(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, telegram_on("http://127.0.0.1:9"))
    db = open_database(settings.database_url)
    assert configured(settings) == ["telegram"]
    notifier = build_notifier(settings, db)
    assert type(notifier).__name__ == "TelegramNotifier"
    [runner] = build_runners(settings, db)
    assert type(runner).__name__ == "TelegramGateway"
    assert chat_setting(settings, "mute_for") == 120.0
    gate = gate_from_settings(settings, db)
    assert isinstance(gate.authorise(Actor("telegram", str(ADMIN)), "view", None), Allowed)
    assert isinstance(gate.authorise(Actor("telegram", str(STRANGER)), "view", None), Refused)


async def test_the_plug_posts_through_the_bot_api_and_turns_updates_into_events(
    tmp_path: Path,
) -> None:
    server = TelegramServer(TOKEN).start()
    try:
        plug = CHANNELS["telegram"].plug()
        channel = plug.channel(settings_for(tmp_path, telegram_on(server.url)))
        await channel.bot.initialize()  # type: ignore[attr-defined]
        try:
            message_id = await channel.post(Post(str(CHAT), "api down", [[("Deny", "d1")]]))
        finally:
            await channel.bot.shutdown()  # type: ignore[attr-defined]
        assert server.messages[(CHAT, int(message_id))]["text"] == "api down"
        assert plug.markup().code("<x>") == "<code>&lt;x&gt;</code>"
        press = Update.de_json(
            {
                "update_id": 7,
                "callback_query": {
                    "id": "cq1",
                    "chat_instance": "ci",
                    "data": "d1",
                    "from": {"id": ADMIN, "is_bot": False, "first_name": "a"},
                    "message": {
                        "message_id": int(message_id),
                        "date": 0,
                        "chat": {"id": CHAT, "type": "group"},
                        "text": "api down",
                    },
                },
            },
            None,
        )
        event = plug.inbound(press)
        assert event is not None
        assert (event.channel, event.kind, event.update_id) == ("telegram", "press", 7)
        assert (event.chat, event.user, event.message_id, event.data) == (
            str(CHAT),
            ADMIN,
            message_id,
            "d1",
        )
    finally:
        server.stop()
