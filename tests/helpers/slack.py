"""Helpers for the tests that run Guard against the local Slack (``tests/fakes/slack.py``): the
``slack:`` settings that point Guard at it, and a message's buttons as Slack shows them."""

from __future__ import annotations

from typing import Any

from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, CHANNEL, SlackServer


def slack_settings(server: SlackServer, channel: str = CHANNEL) -> dict[str, Any]:
    """Guard's ``slack`` section for the local Slack: Socket Mode, announcements not held."""
    return {
        "bot_token": BOT_TOKEN,
        "app_token": APP_TOKEN,
        "channel": channel,
        "api_base_url": server.url,
        "group_wait": "0s",
    }


def buttons(message: dict[str, Any]) -> dict[str, str]:
    """A message's buttons: label -> value (the approval id)."""
    return {
        el["text"]["text"]: el["value"]
        for block in message.get("blocks") or []
        if block["type"] == "actions"
        for el in block["elements"]
    }
