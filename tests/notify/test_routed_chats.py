"""The Telegram notifier asks in the chats an incident's route names, one outbox row per chat,
and closes the question and replies in each of them (in process: the rows, not the sending)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlmodel import col, select

from guard.config import Settings
from guard.notify import build_notifier
from guard.notify.base import HumanRequest, IncidentUpdate
from guard.notify.fanout import FanOut
from guard.notify.pagers.notifier import PagerNotifier
from guard.notify.routing import Router
from guard.notify.telegram.notifier import TelegramNotifier
from guard.store.db import Database, open_database
from guard.store.models import OutboxMessage
from guard.store.paging import PageOutbox
from tests.helpers.agent import stored_incident

KEY = "0123456789abcdef0123456789abcdef"


def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        telegram={"bot_token": "1:x", "chat_id": 1001},
        notifiers={"pagerduty": {"primary": {"routing_key": KEY}}},
        routes=[
            {
                "match": {"severity": "critical"},
                "telegram_chat": -1001,
                "notify": ["pagerduty:primary"],
                "continue": True,
            },
            {"match": {"service": "shop"}, "telegram_chat": -1002},
        ],
    )


def outbox(db: Database, incident_id: int) -> list[tuple[str, str, str]]:
    with db.session() as session:
        found = session.exec(
            select(OutboxMessage)
            .where(OutboxMessage.incident_id == incident_id)
            .order_by(col(OutboxMessage.id))
        ).all()
    return [(r.chat_id, r.method, r.role) for r in found]


@pytest.mark.unit
def test_a_service_route_asks_in_its_chat_and_the_answer_goes_there(tmp_path: Path) -> None:
    s = settings(tmp_path)
    db = open_database(s.database_url)
    notifier = build_notifier(s, db)
    assert isinstance(notifier, FanOut)  # Telegram, and the pager the routes name
    assert {type(n) for n in notifier.notifiers} == {TelegramNotifier, PagerNotifier}
    with db.session() as session:
        warning = stored_incident(
            session, state="awaiting_human", severity="warning", details={"service": "shop"}
        )
        critical = stored_incident(session, state="awaiting_human", details={"service": "shop"})
    assert warning.id is not None and critical.id is not None

    async def main() -> None:
        for inc in (warning, critical):
            await notifier.ask(HumanRequest(inc.id, inc.title, inc.severity, inc.target, 1, "why"))
        await notifier.update(IncidentUpdate(warning.id, warning.title, "resolved", "Healed."))

    asyncio.run(main())
    # the warning: asked in the service's chat only; closed and answered there
    assert outbox(db, warning.id) == [
        ("-1002", "send", "incident"),
        ("-1002", "edit", "incident"),
        ("-1002", "send", "reply"),
    ]
    # the critical one: in the on-call chat and the service's, not the default chat
    assert outbox(db, critical.id) == [("-1001", "send", "incident"), ("-1002", "send", "incident")]
    with db.session() as session:
        pages = session.exec(select(PageOutbox)).all()
    assert [(p.incident_id, p.target, p.action) for p in pages] == [
        (critical.id, "pagerduty:primary", "trigger")
    ]


@pytest.mark.unit
def test_without_routes_nothing_changes(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path, telegram={"bot_token": "1:x", "chat_id": 1001})
    db = open_database(s.database_url)
    notifier = build_notifier(s, db, Router(s))
    with db.session() as session:
        inc = stored_incident(session, state="awaiting_human", details={"service": "shop"})
    assert inc.id is not None
    asyncio.run(notifier.ask(HumanRequest(inc.id, inc.title, inc.severity, inc.target, 1, "why")))
    assert outbox(db, inc.id) == [("1001", "send", "incident")]
