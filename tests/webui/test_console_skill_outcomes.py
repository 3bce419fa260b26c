"""The console's skill pages show each skill's outcomes and its standing on the ladder."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from guard.domain.records import utcnow
from guard.store.ladder import DEMOTED, LadderStep
from guard.store.models import RemediationRun, RunStatus
from tests.conftest import GuardHome
from tests.helpers.telegram import write_http_skill
from tests.webui.helpers import Site

pytestmark = pytest.mark.unit


async def test_the_skill_pages_show_outcomes_and_a_demotion(home: GuardHome) -> None:
    site = Site(home)
    write_http_skill(home, SimpleNamespace(base="http://svc"), "web-fix")  # type: ignore[arg-type]
    with site.db.session() as s:
        for status in (RunStatus.verified, RunStatus.verified, RunStatus.failed):
            s.add(
                RemediationRun(
                    incident_id=site.incident("resolved"),
                    skill="web-fix",
                    target="http://svc",
                    status=status,
                    finished_at=utcnow(),
                )
            )
        s.add(LadderStep(skill="web-fix", step=DEMOTED, reason="demoted: <b>run #3</b> failed"))
    async with site.aclient() as c:
        listing = await c.get("/skills", headers=site.bearer("vic"))
        assert "<td>approval (demoted)</td>" in listing.text
        assert "2/3 verified, 0 reversed" in listing.text
        page = await c.get("/skills/web-fix", headers=site.bearer("vic"))
    outcomes = page.text.split('id="outcomes"')[1].split("</table>")[0]
    cells = outcomes.split("</tr>")[1]
    assert cells.startswith("\n<tr><td>3</td><td>2</td><td>1</td><td>0</td><td>0</td><td>1</td>")
    assert "demoted: &lt;b&gt;run #3&lt;/b&gt; failed" in page.text  # as text
