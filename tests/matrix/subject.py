"""Matrix as a subject of the Inbound contract suite (tests/notify/test_inbound_contract.py):
room events built as ``/sync`` gives them, through Matrix's inbound adapter
(``guard.notify.matrix.updates``) into the channel-neutral answers. A press is a reaction on
the bot's message whose button (as the bot posted it) carries the pressed data; its answer is
what the gateway would post in reply."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from guard.notify.answers.presses import Answers
from guard.notify.matrix import buttons
from guard.notify.matrix.markup import MatrixMarkup
from guard.notify.matrix.updates import MatrixUpdate, event

ROOM, BOT, OPS, STRANGER = "!ops:guard.test", "@guard:guard.test", "@ops:guard.test", "@eve:x.y"


def room_event(kind: str, n: int, user: str, text: str, on: Any) -> dict[str, Any]:
    """An event as ``/sync`` gives it: a reaction (``press``) on ``on``, or a message, maybe a
    reply to ``on`` with the fallback quote clients put in front."""
    common = {"event_id": f"$e{n}", "sender": user, "origin_server_ts": int(time.time() * 1000)}
    if kind == "press":
        rel = {"rel_type": "m.annotation", "event_id": str(on), "key": "✅"}
        return {**common, "type": "m.reaction", "content": {"m.relates_to": rel}}
    content: dict[str, Any] = {"msgtype": "m.text", "body": text}
    if on is not None:
        content["body"] = f"> <{BOT}> Incident\n> the question\n\n{text}"
        content["m.relates_to"] = {"m.in_reply_to": {"event_id": str(on)}}
    return {**common, "type": "m.room.message", "content": content}


@asynccontextmanager
async def matrix_subject(
    tmp_path: Path, world: Callable[..., Any], counter: Iterator[int]
) -> AsyncIterator[tuple[Any, Any, Any, list[int]]]:
    """(deliver, answered, the store, incidents) for the suite's ``Subject``."""
    gateway, ids = world(tmp_path, "matrix", ROOM, OPS, MatrixMarkup())
    answers = Answers(gateway, "matrix", MatrixMarkup())
    said: list[str] = []

    async def answer(text: str, alert: bool) -> None:
        said.append(text)

    async def deliver(kind: str, user: Any, text: str, on: Any, again: Any) -> int:
        n = again or next(counter)
        shown = buttons.buttons([[("▶ Run", text)]]) if kind == "press" else []
        update = MatrixUpdate(ROOM, room_event(kind, n, user, text, on), BOT, shown, answer)
        ev = event(update)
        assert ev is not None and ev.kind == kind
        if await answers.remember(ev):
            act = {"press": answers.press, "command": answers.command}
            await act.get(kind, answers.text)(ev)
        return n

    yield deliver, lambda: list(said), gateway.db, ids
