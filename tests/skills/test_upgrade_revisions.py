"""A data volume of the release before revisions (commit 9171acc), on SQLite and on PostgreSQL:
its learned skill, its incidents and its runs, written by that release's own code (``git
archive`` of the commit, run in a subprocess), upgrade with the skill's history intact: the
skill is revision 1, its outcomes are what the runs already record, ``guard skills history``
shows its learning commit, and the next lesson for the same fault is its revision 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from guard.skills.library import SkillLibrary
from guard.skills.writer import SkillWriter
from tests.conftest import GuardHome
from tests.fakes.postgres import fresh_database
from tests.helpers.agent import REPO
from tests.skills.test_revisions import compose

RELEASE = "9171acc"

# Run by the release's code: learn a skill from incident #1 (a human's fix), then three runs
# of it on incidents #2-#4 (verified, verified, failed), as that release's Guard recorded them.
WRITE_VOLUME = """
import sys
from datetime import timedelta
from pathlib import Path
from guard.domain.records import utcnow
from guard.skills.library import SkillLibrary
from guard.skills.writer import SkillWriter
from guard.store.db import open_database
from guard.store.models import RemediationRun, RunOrigin, RunStatus
from tests.helpers.agent import stored_incident

db = open_database(sys.argv[1])
skills = Path(sys.argv[2])
skills.mkdir()
with db.session() as s:
    incidents = [
        stored_incident(s, monitor_id="containers", source="docker", target="api-1",
                        kind="container_exited", severity="critical",
                        title="container exited on api-1", message="api-1 exited with code 1")
        for _ in range(4)
    ]
    s.commit()
    for inc in incidents:
        s.refresh(inc)
    s.expunge_all()
writer = SkillWriter(SkillLibrary(skills), trust="trusted", git_commit=True,
                     git_author="Guard <guard@localhost>", verify_timeout=30)
learned = writer.write(incidents[0], "docker.restart api-1", action="docker.restart",
                       args={"container": "api-1"}, approver="cli:alice", verdict="running")
now = utcnow()  # the runs are in the past: revision 2, written next, comes after them
with db.session() as s:
    for n, status in enumerate(["verified", "verified", "failed"]):
        s.add(RemediationRun(incident_id=incidents[n + 1].id, skill=learned.name, target="api-1",
                             origin=RunOrigin.skill, status=RunStatus(status),
                             started_at=now - timedelta(seconds=3 - n),
                             finished_at=now - timedelta(seconds=3 - n, milliseconds=-500)))
print(learned.name)
"""


def release_volume(tmp_path: Path, url: str) -> str:
    """The release's code writes the volume (skills in ``tmp_path/skills``, the store at
    ``url``); the learned skill's name."""
    code = tmp_path / "release"
    code.mkdir()
    archive = subprocess.run(
        ["git", "archive", RELEASE, "guard", "tests", "skills", "bench"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(code)], input=archive.stdout, check=True)
    done = subprocess.run(
        [sys.executable, "-c", WRITE_VOLUME, url, str(tmp_path / "skills")],
        cwd=code,
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def upgrades_with_history(tmp_path: Path, url: str) -> None:
    home = GuardHome(tmp_path)
    name = release_volume(tmp_path, url)
    home.write_config({"database_url": url, "builtin_skills_dir": str(tmp_path / "none")})
    assert "revision" not in yaml.safe_load((tmp_path / "skills" / name / "skill.yaml").read_text())

    [listed] = json.loads(home.cli("skills", "list", "--json").stdout)
    assert (listed["name"], listed["revision"], listed["trust"]) == (name, 1, "trusted")
    o = listed["outcomes"]
    assert (o["runs"], o["verified"], o["failed"], o["consecutive_failures"]) == (3, 2, 1, 1)
    history = json.loads(home.cli("skills", "history", name, "--json").stdout)
    [one] = history["revisions"]
    assert (one["revision"], one["made_by"], one["by"]) == (
        1,
        "learned from incident #1",
        "cli:alice",
    )
    assert one["outcomes"]["runs"] == 3

    writer = SkillWriter(
        SkillLibrary(tmp_path / "skills"),
        trust="trusted",
        git_commit=True,
        git_author="Guard <guard@localhost>",
        verify_timeout=30,
    )
    revised = compose(writer)  # the next lesson for the same fault, by this release
    assert (revised.name, revised.revision) == (name, 2)
    history = json.loads(home.cli("skills", "history", name, "--json").stdout)
    assert [(r["revision"], r["outcomes"]["runs"]) for r in history["revisions"]] == [
        (1, 3),
        (2, 0),
    ]
    [listed] = json.loads(home.cli("skills", "list", "--json").stdout)
    assert (listed["revision"], listed["trust"], listed["outcomes"]["runs"]) == (2, "approval", 0)


def test_a_sqlite_volume_of_the_release_upgrades_with_its_skills_history(tmp_path: Path) -> None:
    upgrades_with_history(tmp_path, f"sqlite:///{tmp_path / 'guard.db'}")


def test_a_postgres_volume_of_the_release_upgrades_with_its_skills_history(
    tmp_path: Path, postgres_url: str
) -> None:
    upgrades_with_history(tmp_path, fresh_database(postgres_url))


pytestmark = pytest.mark.timeout(300)
