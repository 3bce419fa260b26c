"""Closing an incident's question happens once: whoever closes it first, nobody overwrites them.

These drive the store-level pieces (Authoriser.claim, outbox.close_question, Sync) directly,
in the orders a busy machine can produce, without a Telegram server.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlmodel import col, select

from guard.actions import ActionError
from guard.config import TelegramSettings
from guard.domain.records import utcnow
from guard.incidents import commands
from guard.incidents.lifecycle import Lifecycle
from guard.notify.answers import presses
from guard.notify.telegram import handlers, outbox
from guard.notify.telegram.senders import Authoriser
from guard.notify.telegram.sync import Sync
from guard.store.db import Database, open_database
from guard.store.models import (
    Approval,
    ChannelMessage,
    HumanCommand,
    Incident,
    IncidentState,
    OutboxMessage,
)
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit

CHAT = "-100"
ADMIN = 42


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def asked(db: Database, state: str = "awaiting_human") -> tuple[int, int, list[str]]:
    """An incident with a live message carrying three buttons; returns ids."""
    now = utcnow()
    with db.session() as s:
        inc = stored_incident(s, state)
        ids = [f"a{inc.id}{k}" for k in ("skill", "deny", "mute")]
        for approval_id, kind in zip(ids, ("skill", "deny", "mute"), strict=True):
            s.add(
                Approval(
                    id=approval_id,
                    incident_id=inc.id,
                    kind=kind,
                    created_at=now,
                    expires_at=now + timedelta(hours=1),
                )
            )
        msg = ChannelMessage(
            channel="telegram",
            chat_id=CHAT,
            message_id=str(500 + inc.id),
            incident_id=inc.id,
            role="incident",
            live=True,
            approvals=ids,
            created_at=now,
        )
        s.add(msg)
        s.flush()
        assert msg.id is not None
        return inc.id, msg.id, ids


def sync(db: Database) -> Sync:
    notifier = SimpleNamespace(closed_text=lambda incident_id, state, text: f"{state}: {text}")
    return Sync(SimpleNamespace(db=db, notifier=notifier, chat_id=CHAT))  # type: ignore[arg-type]


def edits(db: Database) -> list[OutboxMessage]:
    with db.session() as s:
        return list(
            s.exec(
                select(OutboxMessage)
                .where(OutboxMessage.method == "edit")
                .order_by(col(OutboxMessage.id))
            ).all()
        )


def set_state(db: Database, incident_id: int, state: str) -> None:
    with db.session() as s:
        inc = s.get(Incident, incident_id)
        assert inc is not None
        inc.state = IncidentState(state)
        s.add(inc)


def test_a_press_is_not_closed_again_as_expired(db: Database) -> None:
    inc, _, ids = asked(db)
    auth = Authoriser(TelegramSettings(allowed_user_ids=[ADMIN]), db)
    claimed = auth.claim(ids[2], ADMIN, CHAT, str(500 + inc))
    assert isinstance(claimed, Approval) and claimed.kind == "mute"
    # the sync runs between the press and the handler queueing its own closing edit: all the
    # approvals are spent now, which used to read as "nobody answered in time"
    sync(db).once()
    assert edits(db) == []
    outbox.close_question(db, chat_id=CHAT, incident_id=inc, text="Muted by telegram:42")
    set_state(db, inc, "muted")
    sync(db).once()
    assert [e.text for e in edits(db)] == ["Muted by telegram:42"]
    # and a second press is still told who answered
    again: Any = auth.claim(ids[0], ADMIN, CHAT, str(500 + inc))
    assert "already answered" in again.reason


def test_the_agents_report_is_not_overwritten_by_the_sync(db: Database) -> None:
    inc, msg, _ = asked(db)
    set_state(db, inc, "resolved")
    outbox.close_question(db, chat_id=CHAT, incident_id=inc, text="Healed by skill x")
    sync(db).once()
    assert [e.text for e in edits(db)] == ["Healed by skill x"]
    with db.session() as s:
        stored = s.get(ChannelMessage, msg)
        assert stored is not None and stored.live is False


def test_the_sync_closes_once_and_yields_to_an_earlier_closer(db: Database) -> None:
    inc, msg, _ = asked(db)
    set_state(db, inc, "resolved")  # handled from the CLI: nobody reports it but the sync
    sync(db).once()
    sync(db).once()
    assert [e.text for e in edits(db)] == ["resolved: Handled outside this chat."]
    # a closer that only acts on a still-live message queues nothing once it was closed
    assert (
        outbox.close_question(db, chat_id=CHAT, incident_id=inc, text="late", only_message=msg)
        is None
    )
    assert len(edits(db)) == 1


def test_expired_questions_are_closed_with_the_way_forward(db: Database) -> None:
    inc, _, ids = asked(db)
    with db.session() as s:
        for approval_id in ids:
            approval = s.get(Approval, approval_id)
            assert approval is not None
            approval.expires_at = utcnow() - timedelta(seconds=1)
            s.add(approval)
    sync(db).once()
    (edit,) = edits(db)
    assert edit.text.startswith("expired: Nobody answered in time")
    assert f"/fix {inc} COMMAND" in edit.text


def test_a_question_whose_incident_resolved_and_was_asked_again_closes_between_two_rounds(
    db: Database,
) -> None:
    """Resolved from the CLI, reopened and asked anew, all between two sync rounds (a loaded
    machine): the sync never sees the incident out of ``awaiting_human``, yet the old question
    closes, and its buttons cannot answer the new question, which the presser never saw."""
    inc, _, old_ids = asked(db)
    life = Lifecycle(db, actor="cli:root")
    life.move(inc, IncidentState.resolved, "resolved by cli:root")
    life.move(inc, IncidentState.open, "failed again")
    life.move(inc, IncidentState.awaiting_human, "asked again")
    with db.session() as s:  # the new question: its own buttons, in a message of its own
        now = utcnow()
        s.add(Approval(id="new", incident_id=inc, kind="skill", expires_at=now + timedelta(1)))
        s.add(
            ChannelMessage(
                channel="telegram",
                chat_id=CHAT,
                message_id="900",
                incident_id=inc,
                role="incident",
                live=True,
                approvals=["new"],
            )
        )
    sync(db).once()
    (edit,) = edits(db)
    assert edit.text == (
        "resolved: Handled outside this chat; it failed again since and is asked anew."
    )
    with db.session() as s:
        live = {m.message_id for m in s.exec(select(ChannelMessage)) if m.live}
    assert live == {"900"}
    auth = Authoriser(TelegramSettings(allowed_user_ids=[ADMIN]), db)
    stale: Any = auth.claim(old_ids[0], ADMIN, CHAT, str(500 + inc))
    assert stale.reason == f"incident #{inc} was resolved since this question"
    assert isinstance(auth.claim("new", ADMIN, CHAT, "900"), Approval)


def gateway(db: Database) -> Any:
    return SimpleNamespace(
        db=db,
        auth=Authoriser(TelegramSettings(allowed_user_ids=[ADMIN]), db),
        chat_id=CHAT,
        settings=SimpleNamespace(telegram=TelegramSettings()),
        notifier=SimpleNamespace(closed_text=lambda incident_id, state, text: f"{state}: {text}"),
    )


def press(data: str, message_id: int, answered: list[str]) -> Any:
    async def answer(text: str, show_alert: bool = False) -> None:
        answered.append(text)

    message = SimpleNamespace(chat=SimpleNamespace(id=int(CHAT)), message_id=message_id)
    return SimpleNamespace(
        update_id=message_id,
        effective_message=message,
        effective_chat=message.chat,
        callback_query=SimpleNamespace(
            data=data, from_user=SimpleNamespace(id=ADMIN), answer=answer, message=message
        ),
    )


async def test_a_press_is_closed_before_the_agent_can_report_the_heal(
    db: Database, monkeypatch: Any
) -> None:
    inc, _, ids = asked(db)
    real_queue = commands.queue_command

    def agent_heals_at_once(database: Database, **command: Any) -> Any:
        # the agent picks the command up the moment it exists, heals, and says so
        cmd = real_queue(database, **command)
        set_state(database, inc, "resolved")
        outbox.close_question(
            database, chat_id=CHAT, incident_id=inc, text="resolved: healed by skill web-fix"
        )
        return cmd

    monkeypatch.setattr(presses, "queue_command", agent_heals_at_once)
    answered: list[str] = []
    await handlers.Handlers(gateway(db)).on_callback(
        press(ids[0], 500 + inc, answered), cast(Any, None)
    )
    sync(db).once()
    # the outbox sends edits in this order: the heal is the last word, not "running…"
    texts = [e.text for e in edits(db)]
    assert texts[0].startswith("remediating: Approved by telegram:42")
    assert texts[-1] == "resolved: healed by skill web-fix" and len(texts) == 2
    assert answered and answered[0].startswith("Approved by telegram:42")


async def test_a_press_whose_command_cannot_be_queued_says_nothing_ran(
    db: Database, monkeypatch: Any
) -> None:
    inc, _, ids = asked(db)

    def incident_gone(database: Database, **command: Any) -> Any:
        raise ActionError(f"no incident {inc}")

    monkeypatch.setattr(presses, "queue_command", incident_gone)
    answered: list[str] = []
    await handlers.Handlers(gateway(db)).on_callback(
        press(ids[1], 500 + inc, answered), cast(Any, None)
    )
    assert [e.text for e in edits(db)][-1] == (
        f"failed: telegram:42 answered, but nothing ran: no incident {inc}"
    )
    assert answered == [f"Could not deny: no incident {inc}"]


def test_answered_elsewhere_its_question_closes_with_how_the_fix_ended_not_midway(
    db: Database,
) -> None:
    """Pressed on another channel: while that fix runs the question here waits (a press on it
    is refused as already answered), then closes with the outcome. Closing it at
    "remediating" left it saying so after the heal (the first closer wins)."""
    inc, _, ids = asked(db)
    with db.session() as s:  # one of them pressed on Slack: they are all spent there
        for code in ids:
            approval = s.get(Approval, code)
            assert approval is not None
            approval.used_at, approval.used_by = utcnow(), "slack:U1"
            s.add(approval)
        s.add(HumanCommand(incident_id=inc, verb="approve", skill="web-fix", actor="slack:U1"))
    sync(db).once()  # pressed, its command queued, the agent not there yet: not "expired"
    assert edits(db) == []
    set_state(db, inc, "remediating")
    sync(db).once()
    assert edits(db) == []
    set_state(db, inc, "resolved")
    sync(db).once()
    assert [e.text for e in edits(db)] == ["resolved: Handled outside this chat."]
