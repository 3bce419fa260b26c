"""Counts that tell the truth on a real stack: ``guard run`` on the real Docker engine heals one
container with a skill, asks about three (one recovers on its own, one is cured by a human's fix
and learned, one is left waiting), then the daily report, the web overview and ``guard incidents
list --summary`` agree with a count done directly on the store (issue #40, item 5)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.helpers.agent import db_rows, find, guard_process, setup_docker_home, wait_for
from tests.webui.helpers import Site

pytestmark = pytest.mark.docker

# Exits 0 once /tmp/stop exists (no skill matches "exited with code 0"); starts afresh.
UNTIL_STOPPED = "rm -f /tmp/stop; while [ ! -f /tmp/stop ]; do sleep 0.2; done"
CARD = re.compile(r'id="count-([a-z_]+)"[^>]*>[^<]*<b>(\d+)</b>')


def stop_cleanly(container: Any) -> None:
    container.exec_run(["touch", "/tmp/stop"])


def asked(home: GuardHome, container: Any) -> dict[str, Any]:
    return wait_for(
        lambda: find(home, target=container.name, state="awaiting_human"), 60, "Guard to ask"
    )


def store_counts(home: GuardHome) -> dict[str, int]:
    """The figures counted straight from the store's tables (no Guard code)."""

    def one(sql: str) -> int:
        return int(db_rows(home, sql)[0][0])

    healed_by = (
        "SELECT COUNT(*) FROM incident i WHERE i.state = 'resolved' AND EXISTS (SELECT 1 FROM "
        "remediation_run r WHERE r.incident_id = i.id AND r.status = 'verified' AND r.origin = '{}')"
    )
    return {
        "awaiting_human": one(
            "SELECT COUNT(*) FROM incident WHERE state IN ('awaiting_human', 'escalated')"
        ),
        "pending_approvals": one(
            "SELECT COUNT(DISTINCT a.incident_id) FROM approval a JOIN incident i "
            "ON i.id = a.incident_id WHERE a.used_at IS NULL "
            "AND i.state IN ('awaiting_human', 'escalated')"
        ),
        "healed_by_skill": one(healed_by.format("skill")),
        "healed_by_human": one(healed_by.format("human")),
        "recovered": one(
            "SELECT COUNT(*) FROM incident i WHERE i.state = 'resolved' AND NOT EXISTS (SELECT 1 "
            "FROM remediation_run r WHERE r.incident_id = i.id AND r.status = 'verified')"
        ),
        "learned_skills": len(
            [
                p
                for p in (home.root / "skills").glob("*/skill.yaml")
                if "origin: learned" in p.read_text()
            ]
        ),
    }


async def test_the_report_the_overview_and_the_list_count_what_the_store_holds(
    home: GuardHome, containers: Any
) -> None:
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    healed = containers.run("healed", "sleep 600", labels=labels)
    recovers = containers.run("recovers", UNTIL_STOPPED, labels=labels)
    fixed = containers.run("fixed", UNTIL_STOPPED, labels=labels)
    waiting = containers.run("waiting", UNTIL_STOPPED, labels=labels)
    with guard_process(home):
        healed.kill()  # code 137: the trusted skill docker-start-exited heals it, no question
        first = wait_for(
            lambda: find(home, target=healed.name, state="resolved"), 60, "the skill to heal"
        )
        stop_cleanly(recovers)  # code 0: no skill matches, Guard asks a human...
        came_back = asked(home, recovers)
        recovers.start()  # ...who is not needed: it runs again, its check passes
        wait_for(lambda: find(home, id=came_back["id"], state="resolved"), 60, "the recovery")
        stop_cleanly(fixed)
        cured = asked(home, fixed)
        reply = home.cli("reply", str(cured["id"]), "--", "docker.start", fixed.name)
        assert "saved as skill learned-" in reply.stdout, reply.stdout
        stop_cleanly(waiting)
        left = asked(home, waiting)

    truth = store_counts(home)
    assert truth == {
        "awaiting_human": 1,
        "pending_approvals": 1,
        "healed_by_skill": 1,
        "healed_by_human": 1,
        "recovered": 1,
        "learned_skills": 1,
    }

    report = home.cli("report", "daily", "--print").stdout
    print(report)
    for line in (
        "Recovered on their own: 1",
        "Healed by a skill: 1",
        "Healed by a human's fix: 1",
        "Awaiting a human: 1",
    ):
        assert line in report, line
    pending = report.split("Approvals pending")[1].split("\n\n")[0]
    assert f"incident #{left['id']}" in pending and f"#{came_back['id']}" not in pending
    learned = report.split("Skills learned")[1].split("\n\n")[0]
    assert learned.count("learned-") == 1 and f"incident #{cured['id']}" in learned

    listed = json.loads(home.cli("incidents", "list", "--summary", "--json").stdout)
    assert {k: listed["summary"][k] for k in truth} == truth
    assert [i["id"] for i in listed["incidents"]] == [
        left["id"],
        cured["id"],
        came_back["id"],
        first["id"],
    ]
    plain = home.cli("incidents", "list", "--summary").stdout
    assert "awaiting a human: 1" in plain and "recovered on their own: 1" in plain

    site = Site(home)
    async with site.aclient() as c:
        overview = (await c.get("/", headers=site.bearer("vic"))).text
    cards = {k: int(n) for k, n in CARD.findall(overview)}
    assert {k: cards.get(k) for k in truth} == truth
    approvals = overview.split('id="approvals"')[1].split("</table>")[0]
    assert f"/incidents/{left['id']}" in approvals and f"/incidents/{cured['id']}" not in approvals
