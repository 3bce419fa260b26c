"""A chat channel asks the same gate at its front door: a policy put before the allowlist (here
a read-only role) changes what an allowlisted Telegram user may do, through the real handlers,
with each refusal audited once and nothing queued or spent."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest
from sqlmodel import select

from guard.incidents.gate import VIEW, Actor, Gate, Refused
from guard.store.models import (
    Approval,
    AuditEntry,
    ChannelMessage,
    ConversationMessage,
    HumanCommand,
    Incident,
    OutboxMessage,
)
from tests.helpers.telegram import ADMIN
from tests.telegram.conftest import INCIDENT_MESSAGE, world

if TYPE_CHECKING:
    from tests.telegram.conftest import World

pytestmark = pytest.mark.unit
__all__ = ["world"]  # the fixture, shared with tests/telegram/


class ReadOnly:
    """A role: these actors may look, not act; no opinion on anyone else."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def decide(self, actor: Actor, verb: str, incident: Incident | None) -> Refused | None:
        if actor.name in self.names and verb != VIEW:
            return Refused(f"{actor.name} may only look ({verb} needs another role)")
        return None


def deny_button(world: World, approval_id: str) -> None:
    """A live [Deny] button on the incident's message."""
    world.button(approval_id, "deny")


async def test_a_policy_before_the_allowlist_refuses_an_allowlisted_user(world: World) -> None:
    auth = world.handlers.auth
    auth.gate = Gate([ReadOnly({f"telegram:{ADMIN}"}), *auth.gate.policies])
    deny_button(world, "deny-1")

    await world.text(ADMIN, "/incidents", reply_to=None)  # viewing is allowed
    await world.text(ADMIN, "docker.restart api")  # a fix is not
    press = world.press(ADMIN, "deny-1", INCIDENT_MESSAGE)
    await world.handlers.remember(press, None)  # type: ignore[arg-type]
    await world.handlers.on_callback(press, None)  # type: ignore[arg-type]

    refused = AuditEntry.action == "telegram.refused"
    with world.db.session() as s:
        (entry,) = s.exec(select(AuditEntry).where(refused)).all()  # once a window
        said = [m.text for m in s.exec(select(OutboxMessage)).all()]
        approval = s.get(Approval, "deny-1")
    assert entry.actor == f"telegram:{ADMIN}"
    assert entry.data["reason"] == f"telegram:{ADMIN} may only look (reply needs another role)"
    assert world.count(AuditEntry, AuditEntry.action == "human.refused") == 0  # not twice
    assert world.count(HumanCommand) == 0
    assert approval is not None and approval.used_at is None  # the question is still open
    assert any("open incident" in t for t in said)  # /incidents was answered
    assert any(t.startswith("⛔ Refused: telegram:42 may only look") for t in said)
    # refused for acting, not for looking: the user's messages are still remembered
    assert world.count(ConversationMessage, ConversationMessage.direction == "in") == 3


class RefuseAtTheQueue:
    """Allows at the door, refuses in the queue's transaction (a policy that reads state which
    changed in between, e.g. an on-call rota that just rotated)."""

    def __init__(self) -> None:
        self.asked = 0

    def decide(self, actor: Actor, verb: str, incident: Incident | None) -> Refused | None:
        self.asked += 1
        return Refused("your on-call shift just ended") if self.asked > 1 else None


async def test_a_press_the_queue_refuses_leaves_the_question_open(world: World) -> None:
    auth = world.handlers.auth
    auth.gate = Gate([RefuseAtTheQueue(), *auth.gate.policies])
    world.handlers.gw.notifier = SimpleNamespace(  # type: ignore[assignment]
        closed_text=lambda incident_id, state, said: f"#{incident_id} {state}: {said}"
    )
    deny_button(world, "deny-2")
    await world.handlers.on_callback(world.press(ADMIN, "deny-2", INCIDENT_MESSAGE), None)  # type: ignore[arg-type]
    with world.db.session() as s:
        (entry,) = s.exec(select(AuditEntry).where(AuditEntry.action == "human.refused")).all()
        approval = s.get(Approval, "deny-2")
        live = s.exec(select(ChannelMessage)).one().live
    assert entry.data["reason"] == "your on-call shift just ended"
    assert approval is not None and approval.used_at is None and live  # nothing spent or closed
    assert world.count(HumanCommand) == 0
    assert world.count(OutboxMessage, OutboxMessage.method == "edit") == 0
