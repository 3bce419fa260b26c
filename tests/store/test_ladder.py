"""A data volume of release dbf7ca5, with runs its Guard recorded, upgrades with its skills'
history intact: the outcomes come from what the runs and timelines already say, and the
ladder's table is added beside them (``skill_ladder``), empty."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import inspect

from guard.store.db import open_database
from tests.conftest import GuardHome
from tests.helpers.agent import REPO
from tests.store.test_upgrade_release import release_db

SKILL = "docker-start-exited"
RUNS = [  # (id, incident, status, started, finished), as the release wrote them
    (1, 1, "verified", "2026-12-05 10:00:00.000000", "2026-12-05 10:00:04.000000"),
    (2, 2, "failed", "2026-12-05 11:00:00.000000", "2026-12-05 11:00:30.000000"),
    (3, 2, "verified", "2026-12-05 11:01:00.000000", "2026-12-05 11:01:06.000000"),
    (4, 3, "verified", "2026-12-05 12:00:00.000000", "2026-12-05 12:00:02.000000"),
]


def with_history(path: Path) -> str:
    url = release_db(path)
    conn = sqlite3.connect(path)
    for run_id, incident, status, started, finished in RUNS:
        name = SKILL if run_id != 3 else "human-fix"
        origin = "skill" if run_id != 3 else "human"
        conn.execute(
            "INSERT INTO remediation_run (id, incident_id, skill, target, origin, status, "
            "started_at, finished_at, message) VALUES (?, ?, ?, 'svc', ?, ?, ?, ?, '')",
            (run_id, incident, name, origin, status, started, finished),
        )
    conn.execute(  # triage reopened incident 1 after the run verified: the fault came back
        "INSERT INTO incident_timeline (incident_id, at, type, from_state, to_state, message, "
        "data) VALUES (1, '2026-12-05 10:05:00.000000', 'state_changed', 'resolved', 'open', "
        "'failed again', '{}')"
    )
    conn.commit()
    conn.close()
    return url


@pytest.mark.unit
def test_the_ladder_table_is_added_to_a_release_volume(tmp_path: Path) -> None:
    db = open_database(with_history(tmp_path / "guard.db"), read_only=True)
    assert "skill_ladder" in inspect(db.engine).get_table_names()
    assert db.schema_current()


def test_a_release_volume_shows_its_skills_history_at_once(tmp_path: Path) -> None:
    home = GuardHome(tmp_path)
    url = with_history(tmp_path / "release.db")
    shutil.copytree(REPO / "skills" / SKILL, tmp_path / "skills" / SKILL)
    home.write_config({"database_url": url})
    shown = json.loads(home.cli("skills", "show", SKILL, "--json").stdout)
    assert shown["outcomes"] == {
        "runs": 3,
        "verified": 2,
        "failed": 1,
        "changed_nothing": 1,  # run 2 failed; the human's fix after it healed incident 2
        "reversals": 1,
        "consecutive_failures": 0,
        "last_used": "2026-12-05T12:00:00+00:00",
        "median_recovery_seconds": 3.0,
    }
    assert shown["trust"] == "trusted" and shown["demoted"] is None
    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    assert [s["outcomes"]["runs"] for s in listed if s["name"] == SKILL] == [3]
    text = home.cli("skills", "show", SKILL).stdout
    assert "3 run(s): 2 verified, 1 failed (1 changed nothing), 1 reversal(s)" in text
