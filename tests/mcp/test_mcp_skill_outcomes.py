"""MCP's ``show_skill`` gives the skill's outcomes and its standing on the ladder, through the
SDK's in-process client (redacted and fenced as every data tool)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from guard.access.roles import Role
from guard.domain.records import utcnow
from guard.mcp.service import GuardTools
from guard.mcp.stdio import stdio_actor, stdio_gate
from guard.store.ladder import DEMOTED, LadderStep
from guard.store.models import RemediationRun, RunStatus
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident
from tests.helpers.telegram import write_http_skill
from tests.mcp.helpers import parts, unfenced
from tests.mcp.test_mcp_service import call, client

pytestmark = pytest.mark.unit


async def test_show_skill_says_how_the_skill_fared_and_why_it_was_demoted(home: GuardHome):
    write_http_skill(home, SimpleNamespace(base="http://svc"), "web-fix")  # type: ignore[arg-type]
    p = parts(home)
    with p.db.session() as s:
        inc = stored_incident(s, "resolved")
        for status in (RunStatus.verified, RunStatus.failed, RunStatus.failed):
            s.add(
                RemediationRun(
                    incident_id=inc.id,
                    skill="web-fix",
                    target="http://svc",
                    status=status,
                    finished_at=utcnow(),
                )
            )
        s.add(LadderStep(skill="web-fix", step=DEMOTED, reason="demoted after runs #2, #3"))
    actor = stdio_actor()
    async with client(GuardTools(p, stdio_gate(actor, Role.viewer, p)), actor) as c:
        text, error = await call(c, "show_skill", name="web-fix")
    assert not error
    lines = unfenced(text, "show_skill").splitlines()
    assert lines[0].startswith("web-fix: ")
    assert "trust: approval" in lines
    assert "outcomes: 3 run(s): 1 verified, 2 failed, 0 reversal(s), 2 failure(s) in a row" in (
        " ".join(lines)
    )
    assert "demoted: demoted after runs #2, #3" in lines
