"""``guard mcp`` as a local agent starts it (a subprocess, the SDK's stdio client): its role is
``--role``, its actor ``mcp:stdio:<unix user>``, a bad role exits 2 naming the field."""

from __future__ import annotations

import getpass

from sqlmodel import select

from guard.store.models import AuditEntry
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident
from tests.mcp.helpers import TEN, Transcript, over_stdio


def test_a_bad_role_exits_2_naming_the_option(home: GuardHome) -> None:
    proc = home.cli("mcp", "--role", "root", check=False)
    assert proc.returncode == 2
    assert "--role: unknown role 'root': one of viewer, operator, approver, admin" in proc.stderr


async def test_the_stdio_actor_has_the_role_it_was_started_with(home: GuardHome) -> None:
    db = home.database()
    with db.session() as session:
        inc = stored_incident(session, state="awaiting_human", title="api down").id
    said = Transcript()
    async with over_stdio(home, "--role", "viewer") as agent:
        assert set(await said.listing(agent)) == TEN
        assert (await said.json(agent, "show_incident", id=inc))["title"] == "api down"
        text, error = await said.call(agent, "sandbox_run", incident_id=inc, command="id")
        assert error and text == "refused: needs operator; you are viewer"
    me = f"mcp:stdio:{getpass.getuser()}"
    with db.session() as session:
        rows = session.exec(select(AuditEntry).where(AuditEntry.actor == me)).all()
    assert [r.action for r in rows] == ["mcp.show_incident", "mcp.refused", "mcp.sandbox_run"]
    assert rows[1].data["reason"] == "needs operator; you are viewer"
