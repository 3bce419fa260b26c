"""An update Telegram delivers again (Guard died after handling it, before ``getUpdates``
confirmed it) is skipped by the restarted gateway: one command, one acknowledgement.

The handlers run in process as PTB runs them (``remember`` in group -1, then the handler; an
``ApplicationHandlerStop`` from ``remember`` ends the update); the restarted gateway is a new
``Handlers`` on the same store."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
from sqlmodel import col, select
from telegram import Update
from telegram.ext import ApplicationHandlerStop

from guard.notify.telegram.handlers import Handlers
from guard.store.models import HumanCommand, OutboxMessage, TelegramUpdate
from tests.telegram_helpers import ADMIN

pytestmark = pytest.mark.unit

if TYPE_CHECKING:
    from tests.telegram.conftest import World


async def deliver(handlers: Handlers, update: Update, *, command: bool = False) -> None:
    ctx: Any = SimpleNamespace(args=(update.effective_message.text or "").split()[1:])  # type: ignore[union-attr]
    try:
        await handlers.remember(update, ctx)
    except ApplicationHandlerStop:
        return
    await (handlers.on_command if command else handlers.on_text)(update, ctx)


def restarted(world: World) -> Handlers:
    return Handlers(world.handlers.gw)


def texts(world: World, contains: str) -> list[str]:
    with world.db.session() as s:
        rows = s.exec(select(OutboxMessage).where(col(OutboxMessage.text).contains(contains)))
        return [r.text for r in rows]


async def test_a_reply_delivered_again_after_a_restart_queues_one_command(world: World) -> None:
    reply = world.message(ADMIN, "docker.restart api", reply_to=77)
    await deliver(world.handlers, reply)
    await deliver(restarted(world), reply)  # the same update_id, to the restarted gateway
    assert world.count(HumanCommand) == 1
    assert len(texts(world, "Running your fix for incident")) == 1
    assert world.count(TelegramUpdate, TelegramUpdate.update_id == reply.update_id) == 1
    other = world.message(ADMIN, "docker.restart api", reply_to=77)  # a new update does count
    await deliver(restarted(world), other)
    assert world.count(HumanCommand) == 2


async def test_a_command_delivered_again_is_answered_once(world: World) -> None:
    status = world.message(ADMIN, "/incidents")
    await deliver(world.handlers, status, command=True)
    await deliver(restarted(world), status, command=True)
    assert len(texts(world, "#1")) == 1
