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
from guard.store.models import HumanCommand, InboundUpdate, OutboxMessage
from tests.helpers.telegram import ADMIN

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
    assert world.count(InboundUpdate, InboundUpdate.update_id == reply.update_id) == 1
    other = world.message(ADMIN, "docker.restart api", reply_to=77)  # a new update does count
    await deliver(restarted(world), other)
    assert world.count(HumanCommand) == 2


async def test_a_command_delivered_again_is_answered_once(world: World) -> None:
    status = world.message(ADMIN, "/incidents")
    await deliver(world.handlers, status, command=True)
    await deliver(restarted(world), status, command=True)
    assert len(texts(world, "#1")) == 1


async def test_a_press_cut_short_before_its_command_counts_when_delivered_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approval is spent in the transaction that queues the press's command: Guard dying
    between the two (here, the command's audit entry fails) leaves the approval unspent and
    the update unrecorded, so Telegram's redelivery is heard, not refused as answered."""
    from datetime import timedelta

    from guard.domain.records import utcnow
    from guard.store import audit
    from guard.store.models import Approval, ChannelMessage
    from tests.telegram.conftest import INCIDENT_MESSAGE

    with world.db.session() as s:
        s.add(
            Approval(
                id="deny-1",
                incident_id=world.incident_id,
                kind="deny",
                expires_at=utcnow() + timedelta(hours=1),
            )
        )
        msg = s.exec(select(ChannelMessage)).one()
        msg.approvals = ["deny-1"]
        s.add(msg)
    # the closing edit's text (the notifier renders it; its own tests cover that)
    world.handlers.gw.notifier = SimpleNamespace(  # type: ignore[assignment]
        closed_text=lambda incident_id, state, said: f"#{incident_id} {state}: {said}"
    )
    press = world.press(ADMIN, "deny-1", INCIDENT_MESSAGE)
    real_append = audit.append

    def dies(*args: Any, **kw: Any) -> Any:  # at the command's own entry, after the press's
        if str(kw.get("action", "")).startswith("human."):
            raise RuntimeError("killed mid-transaction")
        return real_append(*args, **kw)

    monkeypatch.setattr(audit, "append", dies)
    with pytest.raises(RuntimeError):
        await world.handlers.on_callback(press, None)  # type: ignore[arg-type]
    with world.db.session() as s:
        assert s.get(Approval, "deny-1").used_at is None  # type: ignore[union-attr]
    assert world.count(HumanCommand) == 0

    monkeypatch.setattr(audit, "append", real_append)
    await restarted(world).on_callback(press, None)  # type: ignore[arg-type]
    with world.db.session() as s:
        assert s.get(Approval, "deny-1").used_at is not None  # type: ignore[union-attr]
        cmd = s.exec(select(HumanCommand)).one()
    assert cmd.verb == "deny" and world.count(HumanCommand) == 1
    await restarted(world).on_callback(press, None)  # type: ignore[arg-type]
    assert world.count(HumanCommand) == 1  # a third delivery is skipped
