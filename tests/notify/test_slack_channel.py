"""The Slack channel against the local Slack, through slack_sdk: what Guard posts is Block Kit
Slack accepts (long evidence included), a command is shown whole with its digest and only then
gets a button, replies go in the incident's thread, edits are ``chat.update``, a 429's
``Retry-After`` is honoured (by the outbox too), a refusal is final, a post a crash cut short is found, not posted
again. And the local Slack refuses what Slack refuses. Also the ``slack`` settings
(guard/config/slack.py, guard/notify/slack/blocks.py, mrkdwn.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from guard.config import Settings
from guard.notify.base import HumanRequest, SkillOption
from guard.notify.channel import Post, Rejected, Retry
from guard.notify.outbox import queue
from guard.notify.outbox.worker import OutboxWorker
from guard.notify.slack.channel import SlackChannel, client
from guard.notify.slack.markup import SlackMarkup
from guard.store.db import open_database
from guard.util.commandtext import digest, short
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, CHANNEL, SIGNING_SECRET, SlackServer

pytestmark = pytest.mark.unit

COMMAND = "docker restart api && curl -fsS http://api:8080/healthz > /dev/null"


def question(evidence: str = "", command: str = COMMAND) -> HumanRequest:
    return HumanRequest(
        incident_id=7,
        title="api <exited> & gone",
        severity="critical",
        target="api",
        count=3,
        evidence=evidence,
        options=[SkillOption("proposal", "a model's proposal", "run-1", command, digest(command))],
        deny_id="deny-1",
        mute_id="mute-1",
    )


def values(message: dict[str, Any]) -> list[str]:
    return [
        el["value"] for b in message["blocks"] if b["type"] == "actions" for el in b["elements"]
    ]


async def test_a_question_is_block_kit_slack_accepts_with_the_command_shown_whole(
    slack: SlackServer,
) -> None:
    channel = SlackChannel(client(BOT_TOKEN, slack.url))
    text, buttons = SlackMarkup().request(question("x" * 20000 + "\n<tail>"))
    posted = await channel.post(Post(CHANNEL, text, buttons))
    [msg] = slack.bot_messages()
    assert msg["ts"] == posted
    assert f"Runs exactly this (sha256 {short(digest(COMMAND))}):" in msg["text"]
    assert (
        "```docker restart api &amp;&amp; curl -fsS http://api:8080/healthz &gt; /dev/null```"
        in (msg["text"])
    )
    assert "*Incident #7* [critical]: api &lt;exited&gt; &amp; gone" in msg["text"]
    assert "Full text: `guard incidents show 7`" in msg["text"]  # the evidence was cut
    assert values(msg) == ["run-1", "fix:7", "deny-1", "mute-1"]
    sections = [b for b in msg["blocks"] if b["type"] == "section"]
    assert len(sections) > 1 and all(len(b["text"]["text"]) <= 3000 for b in sections)
    assert all(b["text"]["text"].count("```") % 2 == 0 for b in sections)
    fenced = question(command="printf '```' > x")  # would break out of its code block
    text, buttons = SlackMarkup().request(fenced)
    assert [v for row in buttons for _, v in row] == ["fix:7", "deny-1", "mute-1"]
    assert "Not offered: it holds a code fence" in text


async def test_replies_go_in_the_thread_and_edits_update_the_message(slack: SlackServer) -> None:
    channel = SlackChannel(client(BOT_TOKEN, slack.url))
    asked = await channel.post(Post(CHANNEL, "question", [[("✖ Deny", "deny-1")]]))
    await channel.post(Post(CHANNEL, "✅ Resolved", reply_to=asked))
    [reply] = [c["params"] for c in slack.sent()][1:]
    assert reply["thread_ts"] == asked
    await channel.edit(CHANNEL, asked, "closed", [])
    [update] = [c["params"] for c in slack.sent("chat.update")]
    assert update["ts"] == asked and update["text"] == "closed"
    assert slack.messages[(CHANNEL, asked)]["blocks"] == [
        {"type": "section", "text": {"type": "mrkdwn", "text": "closed"}}
    ]


async def test_a_rate_limit_is_a_retry_after_its_seconds_and_a_refusal_is_final(
    slack: SlackServer,
) -> None:
    channel = SlackChannel(client(BOT_TOKEN, slack.url))
    slack.fail("chat.postMessage", status=429, retry_after=7)
    with pytest.raises(Retry) as retry:
        await channel.post(Post(CHANNEL, "hello"))
    assert retry.value.after == 7
    assert not slack.bot_messages()
    await channel.post(Post(CHANNEL, "hello"))  # the limit over: it goes
    with pytest.raises(Rejected, match="invalid_auth"):
        await SlackChannel(client("xoxb-wrong", slack.url)).post(Post(CHANNEL, "hello"))
    with pytest.raises(Rejected, match="channel_not_found"):
        await channel.post(Post("C0NOWHERE", "hello"))
    assert len(slack.bot_messages()) == 1


async def test_a_post_a_crash_cut_short_is_found_not_posted_again(slack: SlackServer) -> None:
    """Slack's ids are no numbered sequence (the floor is 0): the post is found by its content."""
    channel = SlackChannel(client(BOT_TOKEN, slack.url))
    await channel.post(Post(CHANNEL, "before"))
    post = Post(CHANNEL, "the question", [[("✖ Deny", "deny-1")]])
    posted = await channel.post(post)  # Guard died before it stored the id
    assert await channel.find(post, 0, 0) == posted
    other = Post(CHANNEL, "the question", [[("✖ Deny", "deny-2")]])
    assert await channel.find(other, 0, 0) is None
    assert await channel.find(Post(CHANNEL, "never posted"), 0, 0) is None
    reply = Post(CHANNEL, "in the thread", reply_to=posted)
    threaded = await channel.post(reply)
    assert await channel.find(reply, 0, 0) == threaded
    assert await channel.find(Post(CHANNEL, "the question", reply_to=posted), 0, 0) is None


@pytest.mark.parametrize(
    ("blocks", "why"),
    [
        (
            [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}],
            "/blocks/0/text/text",
        ),
        ([{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}] * 51, "/blocks"),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "a",
                            "value": "v",
                            "text": {"type": "plain_text", "text": "x" * 76},
                        }
                    ],
                }
            ],
            "/blocks/0/elements/0/text",
        ),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "a",
                            "value": "v" * 2001,
                            "text": {"type": "plain_text", "text": "x"},
                        }
                    ],
                }
            ],
            "/blocks/0/elements/0/value",
        ),
    ],
)
async def test_the_local_slack_refuses_a_block_over_its_limits(
    slack: SlackServer, blocks: list[dict[str, Any]], why: str
) -> None:
    web = AsyncWebClient(token=BOT_TOKEN, base_url=slack.url)
    with pytest.raises(SlackApiError) as refused:
        await web.chat_postMessage(channel=CHANNEL, text="t", blocks=blocks)
    assert refused.value.response["error"] == "invalid_blocks"
    assert any(why + "]" in m for m in refused.value.response["response_metadata"]["messages"])
    with pytest.raises(SlackApiError, match="not_allowed_token_type"):
        await AsyncWebClient(token=BOT_TOKEN, base_url=slack.url).apps_connections_open(
            app_token=BOT_TOKEN
        )
    assert not slack.bot_messages()


def test_the_tokens_come_from_the_environment_and_are_masked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("GUARD_SLACK__BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("GUARD_SLACK__APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("GUARD_SLACK__SIGNING_SECRET", SIGNING_SECRET)
    settings = Settings(data_dir=tmp_path, slack={"channel": CHANNEL})
    assert settings.slack.configured and settings.slack.mode == "socket"
    assert {BOT_TOKEN, APP_TOKEN, SIGNING_SECRET} <= set(settings.secret_values())
    assert BOT_TOKEN not in repr(settings.slack)
    monkeypatch.delenv("GUARD_SLACK__APP_TOKEN")
    with pytest.raises(ValueError, match=r"slack\.mode socket needs slack\.app_token"):
        Settings(data_dir=tmp_path, slack={"channel": CHANNEL})


async def test_the_outbox_waits_out_a_rate_limit_and_posts_once(
    slack: SlackServer, tmp_path: Any
) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    queue.enqueue(db, "slack", method="send", chat_id=CHANNEL, text="api down", role="text")
    slack.fail("chat.postMessage", status=429, retry_after=2)
    stop = asyncio.Event()
    worker = OutboxWorker(SlackChannel(client(BOT_TOKEN, slack.url)), db)
    task = asyncio.create_task(worker.run(stop))
    try:
        for _ in range(100):
            if not queue.pending(db, "slack"):
                break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    first, second = slack.sent()
    assert second["at"] - first["at"] >= 2  # Retry-After, honoured
    assert len(slack.bot_messages("api down")) == 1


def test_the_daily_report_is_queued_for_slack_in_mrkdwn(tmp_path: Any) -> None:
    from guard.notify.kinds import CHANNELS

    slack = {"bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "channel": CHANNEL}
    settings = Settings(data_dir=tmp_path, slack=slack)
    db = open_database(settings.database_url)
    said = (
        CHANNELS["slack"].plug().report(settings, db, "<b>Daily</b> 3 &lt; 4 <code>x</code>", b"")
    )
    assert said == "report queued for Slack; `guard run` sends it"
    [row] = queue.pending(db, "slack")
    assert (row.chat_id, row.role, row.text) == (CHANNEL, "report", "Daily 3 &lt; 4 x")
