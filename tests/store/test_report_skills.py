"""The daily report's *Skills*: what ran that day, with its outcomes, and the skills the
ladder moved (demoted, proposed for promotion) or that went stale, by `guard report daily`."""

from __future__ import annotations

import shutil
from datetime import timedelta

from guard.store.ladder import DEMOTED, LadderStep
from guard.store.models import RemediationRun, RunStatus
from tests.helpers.agent import REPO
from tests.store.test_report_daily import at, seed


def test_the_report_lists_the_skills_that_ran_and_the_demoted_ones(home):
    for name in ("docker-start-exited", "docker-restart-loop"):
        shutil.copytree(REPO / "skills" / name, home.root / "skills" / name)
    db = home.database()
    seed(db)
    with db.session() as s:
        for i, status in enumerate((RunStatus.verified, RunStatus.verified, RunStatus.failed)):
            started = at(9, 12 + i)
            s.add(
                RemediationRun(
                    incident_id=1,
                    skill="docker-start-exited",
                    target="api",
                    status=status,
                    started_at=started,
                    finished_at=started + timedelta(seconds=4),
                )
            )
        s.add(
            RemediationRun(  # the day before: not in the window
                incident_id=5,
                skill="docker-restart-loop",
                target="old",
                status=RunStatus.verified,
                started_at=at(12, days=-1),
                finished_at=at(12, days=-1),
            )
        )
        s.add(LadderStep(skill="docker-start-exited", step=DEMOTED, reason="2 failed"))
    out = home.cli("report", "daily", "--print", "--date", "2024-03-10").stdout
    section = out.split("Skills\n")[1].split("\n\n")[0]
    assert section.splitlines() == [  # 2024 is over 90 days ago (skills.stale_after): stale
        "• docker-restart-loop (stale): 1 run(s): 1 verified, 0 failed, 0 reversal(s), "
        "median recovery 0.0s, last used 2024-03-09 12:00 UTC",
        "• docker-start-exited (demoted to approval, stale): 3 run(s): 2 verified, 1 failed, "
        "0 reversal(s), 1 failure(s) in a row, median recovery 4.0s, "
        "last used 2024-03-10 09:14 UTC",
    ]
