"""Roles on Telegram, through the real handlers and the gate Guard builds from its settings: a
viewer's Approve press, fix reply and /mute are refused naming the missing role, audited once,
and run nothing; an operator mutes; an approver's press is queued; a refused flood stays quiet."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest
from sqlmodel import select

from guard.config import Settings, TelegramSettings
from guard.notify.running_gate import gate_from_settings
from guard.store.models import (
    Approval,
    AuditEntry,
    ChannelMessage,
    HumanCommand,
    Mute,
    OutboxMessage,
)
from tests.helpers.telegram import ADMIN
from tests.telegram.conftest import INCIDENT_MESSAGE, world

if TYPE_CHECKING:
    from tests.telegram.conftest import World

pytestmark = pytest.mark.unit
__all__ = ["world"]  # the fixture, shared with tests/telegram/

VIEWER, OPERATOR = 43, 44
REFUSED = AuditEntry.action == "telegram.refused"


@pytest.fixture
def roles(world: World) -> World:
    """The world with ``access.telegram`` roles; ADMIN is only in allowed_user_ids (approver)."""
    settings = Settings(
        telegram=TelegramSettings(allowed_user_ids=[ADMIN]),
        access={"telegram": {VIEWER: "viewer", OPERATOR: "operator"}},
    )
    world.handlers.auth.gate = gate_from_settings(settings, world.db)
    world.handlers.gw.notifier = SimpleNamespace(  # type: ignore[assignment]
        closed_text=lambda incident_id, state, said: f"#{incident_id} {state}: {said}"
    )
    return world


async def press(world: World, user: int, approval_id: str) -> None:
    update = world.press(user, approval_id, INCIDENT_MESSAGE)
    await world.handlers.remember(update, None)  # type: ignore[arg-type]
    await world.handlers.on_callback(update, None)  # type: ignore[arg-type]


def refusals(world: World) -> list[tuple[str, str]]:
    with world.db.session() as s:
        return [(e.actor, e.data["reason"]) for e in s.exec(select(AuditEntry).where(REFUSED))]


def said(world: World) -> list[str]:
    with world.db.session() as s:
        return [m.text for m in s.exec(select(OutboxMessage)).all()]


async def test_a_viewers_approve_press_is_refused_and_spends_nothing(roles: World) -> None:
    roles.button("ok-1", "skill", "restart")
    await press(roles, VIEWER, "ok-1")
    assert refusals(roles) == [(f"telegram:{VIEWER}", "needs approver; you are viewer")]
    assert roles.count(HumanCommand) == 0
    assert roles.count(AuditEntry, AuditEntry.action == "human.refused") == 0  # audited once
    with roles.db.session() as s:
        approval = s.get(Approval, "ok-1")
        live = s.exec(select(ChannelMessage)).one().live
    assert approval is not None and approval.used_at is None and live  # still open


async def test_an_approvers_press_is_queued(roles: World) -> None:
    roles.button("ok-2", "skill", "restart")
    await press(roles, ADMIN, "ok-2")
    with roles.db.session() as s:
        (cmd,) = s.exec(select(HumanCommand)).all()
        approval = s.get(Approval, "ok-2")
        (entry,) = s.exec(select(AuditEntry).where(AuditEntry.action == "human.approve")).all()
    assert (cmd.verb, cmd.skill, cmd.actor) == ("approve", "restart", f"telegram:{ADMIN}")
    assert approval is not None and approval.used_by == f"telegram:{ADMIN}"
    assert entry.data["allowed"] == "role approver"
    assert refusals(roles) == []


async def test_a_viewers_fix_reply_is_refused_and_runs_nothing(roles: World) -> None:
    await roles.text(VIEWER, "docker.restart api")
    assert refusals(roles) == [(f"telegram:{VIEWER}", "needs approver; you are viewer")]
    assert roles.count(HumanCommand) == 0
    assert "⛔ Refused: needs approver; you are viewer." in said(roles)


async def test_a_viewers_mute_is_refused_an_operators_mutes(roles: World) -> None:
    await roles.text(VIEWER, "/mute api 2h", reply_to=None)
    assert refusals(roles) == [(f"telegram:{VIEWER}", "needs operator; you are viewer")]
    assert roles.count(Mute) == 0
    assert "⛔ Refused: needs operator; you are viewer." in said(roles)

    await roles.text(OPERATOR, "/mute api 2h", reply_to=None)
    with roles.db.session() as s:
        (mute,) = s.exec(select(Mute)).all()
    assert (mute.target, mute.by) == ("api", f"telegram:{OPERATOR}")
    # an operator may not fix: refused, naming the role missing
    await roles.text(OPERATOR, "docker.restart api")
    assert refusals(roles)[-1] == (f"telegram:{OPERATOR}", "needs approver; you are operator")
    assert roles.count(HumanCommand) == 0


async def test_a_viewers_mute_button_is_refused(roles: World) -> None:
    roles.button("mute-1", "mute")
    await press(roles, VIEWER, "mute-1")
    assert refusals(roles) == [(f"telegram:{VIEWER}", "needs operator; you are viewer")]
    assert roles.count(Mute) == 0 and roles.count(HumanCommand) == 0


async def test_a_viewer_may_look_but_not_ask_for_a_report(roles: World) -> None:
    await roles.text(VIEWER, "/incidents", reply_to=None)
    assert any("open incident" in t for t in said(roles))
    assert refusals(roles) == []
    await roles.text(VIEWER, "/report", reply_to=None)
    assert refusals(roles) == [(f"telegram:{VIEWER}", "needs operator; you are viewer")]


async def test_a_refused_viewers_flood_is_audited_and_answered_once(roles: World) -> None:
    roles.button("ok-3", "skill", "restart")
    for i in range(20):
        await roles.text(VIEWER, f"docker.restart api-{i}")
        await press(roles, VIEWER, "ok-3")
        await roles.text(VIEWER, "/mute api 2h", reply_to=None)
    assert len(refusals(roles)) == 1  # one row a window, not sixty
    assert sum(t.startswith("⛔ Refused") for t in said(roles)) == 1
    assert roles.count(HumanCommand) == 0 and roles.count(Mute) == 0
    # the approver is not held back by the viewer's window
    await press(roles, ADMIN, "ok-3")
    assert roles.count(HumanCommand) == 1
