"""A room per route: an incident a route sends to another Matrix room is asked there (its own
outbox rows), the others in the default room; the gateway joins and syncs every such room."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import Settings
from guard.notify.base import HumanRequest
from guard.notify.matrix.gateway import MatrixGateway
from guard.notify.matrix.notifier import MatrixNotifier
from guard.notify.routing import Router
from guard.store.db import open_database
from guard.store.models import IncidentState, OutboxMessage
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit

DEFAULT, SHOP = "!default:example.org", "!shop:example.org"


async def test_a_route_names_the_room_an_incident_is_asked_in(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        matrix={
            "homeserver": "https://matrix.example.org",
            "user_id": "@guard:example.org",
            "access_token": "syt_secret_token_value",
            "room_id": DEFAULT,
        },
        routes=[{"match": {"severity": "critical"}, "chats": {"matrix": SHOP}}],
    )
    db = open_database(settings.database_url)
    with db.session() as s:
        shop = stored_incident(
            s, IncidentState.awaiting_human, fingerprint="a", severity="critical"
        )
        other = stored_incident(
            s, IncidentState.awaiting_human, fingerprint="b", severity="warning"
        )
        asked = [(int(i.id), i.target) for i in (shop, other)]  # type: ignore[arg-type]
    notifier = MatrixNotifier(settings, db, Router(settings))
    for incident_id, target in asked:
        await notifier.ask(
            HumanRequest(
                incident_id=incident_id,
                title="t",
                severity="critical",
                target=target,
                count=1,
                evidence="",
                deny_id=f"deny-{incident_id}",
            )
        )
    with db.session() as s:
        rooms = {r.incident_id: r.chat_id for r in s.exec(select(OutboxMessage)).all()}
    assert rooms == {asked[0][0]: SHOP, asked[1][0]: DEFAULT}
    assert MatrixGateway(settings, db).rooms == [DEFAULT, SHOP]
