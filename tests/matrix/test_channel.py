"""``MatrixChannel`` against a real Synapse: a post shows its text and its buttons (reaction
keys and codes) and keeps them in its content; a reply is an ``m.in_reply_to``; an edit is an
``m.replace``; ``find`` finds a post a crash left unknown, and nothing else; a room the bot is
not in is a refusal (``Rejected``), a homeserver that is down ``Unreachable``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from nio import AsyncClient, AsyncClientConfig

from guard.notify.channel import Post, Rejected, Unreachable
from guard.notify.matrix.buttons import BUTTONS, code
from guard.notify.matrix.channel import MatrixChannel
from tests.matrix.conftest import Room

QUESTION = [[("▶ Run web-fix", "appr-1")], [("✍ Send a fix", "fix:3"), ("✖ Deny", "deny-1")]]


@pytest.fixture
async def channel(room: Room) -> AsyncIterator[MatrixChannel]:
    room.hs.join(room.bot, room.room_id)
    config = AsyncClientConfig(max_limit_exceeded=0, max_timeouts=0)
    client = AsyncClient(room.hs.url, room.bot.user_id, config=config)
    client.access_token, client.user_id = room.bot.access_token, room.bot.user_id
    try:
        yield MatrixChannel(client)
    finally:
        await client.close()


async def test_a_post_shows_its_buttons_as_reactions_and_codes(room: Room, channel) -> None:
    event_id = await channel.post(Post(room.room_id, "<b>Incident #3</b> &lt;web&gt;", QUESTION))
    [posted] = [e for e in room.hs.messages(room.ops, room.room_id) if e["event_id"] == event_id]
    body = posted["content"]
    assert body["formatted_body"].startswith("<b>Incident #3</b> &lt;web&gt;")
    assert body["body"].startswith("Incident #3 <web>")
    assert f"▶ Run web-fix: react ✅ or reply {code('appr-1')}" in body["body"]
    assert f"✖ Deny: react ❌ or reply {code('deny-1')}" in body["body"]
    assert [b["data"] for b in body[BUTTONS]] == ["appr-1", "fix:3", "deny-1"]


async def test_a_reply_and_an_edit(room: Room, channel) -> None:
    asked = await channel.post(Post(room.room_id, "question", QUESTION))
    said = await channel.post(Post(room.room_id, "outcome", reply_to=asked))  # type: ignore[arg-type]
    await channel.edit(room.room_id, asked, "<b>Resolved</b>", [])
    events = {e["event_id"]: e for e in room.hs.messages(room.ops, room.room_id)}
    assert events[said]["content"]["m.relates_to"] == {"m.in_reply_to": {"event_id": asked}}
    [edit] = [e for e in events.values() if "m.new_content" in e["content"]]
    assert edit["content"]["m.relates_to"] == {"rel_type": "m.replace", "event_id": asked}
    assert edit["content"]["m.new_content"]["formatted_body"] == "<b>Resolved</b>"
    assert BUTTONS not in edit["content"]["m.new_content"]  # the buttons are gone


async def test_find_adopts_the_post_a_crash_left_unknown_and_only_it(room: Room, channel) -> None:
    post = Post(room.room_id, "Incident #4", QUESTION)
    assert await channel.find(post, 0, 0) is None  # never posted
    posted = await channel.post(post)
    assert await channel.find(post, 0, 0) == posted
    await channel.post(Post(room.room_id, "a later message"))
    assert await channel.find(post, 0, 0) is None  # the bot said something after it: not it


async def test_a_room_the_bot_is_not_in_is_refused_and_a_dead_server_unreachable(
    room: Room, synapse
) -> None:
    outsider = synapse.register(f"outsider{id(room)}")
    client = AsyncClient(synapse.url, outsider.user_id)
    client.access_token, client.user_id = outsider.access_token, outsider.user_id
    try:
        with pytest.raises(Rejected, match="M_FORBIDDEN"):
            await MatrixChannel(client).post(Post(room.room_id, "hello"))
    finally:
        await client.close()
    dead = AsyncClient(
        "http://127.0.0.1:9", outsider.user_id, config=AsyncClientConfig(max_timeouts=0)
    )
    dead.access_token = outsider.access_token
    try:
        with pytest.raises(Unreachable) as err:
            await MatrixChannel(dead).post(Post(room.room_id, "hello"))
        assert not err.value.uncertain  # never connected: certain nothing was posted
    finally:
        await dead.close()
