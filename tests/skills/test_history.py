"""``guard skills history NAME``: each revision of a skill (its number, when, what made it, its
commit), the outcomes of each revision, and with ``--diff`` the steps' diff between them (a
real skills git repository, a real SQLite store, ``guard`` as a subprocess)."""

from __future__ import annotations

import json
from datetime import timedelta

from guard.domain.records import utcnow
from guard.skills.library import SkillLibrary
from guard.skills.review import Review, ReviewBook
from guard.skills.writer import SkillWriter
from guard.store.models import RunStatus
from tests.conftest import GuardHome
from tests.skills.test_revisions import compose, restart
from tests.skills.test_revisions import runs as stored_runs


def runs(home: GuardHome, name: str, statuses: list[RunStatus], at) -> None:
    db = home.database()
    stored_runs(db, name, *statuses, at=at)
    db.dispose()


def committing_writer(home: GuardHome) -> SkillWriter:
    """A writer that commits each skill it saves to the home's skills repository."""
    (home.root / "skills").mkdir()
    return SkillWriter(
        SkillLibrary(home.root / "skills"),
        trust="trusted",
        git_commit=True,
        git_author="T <t@x>",
        verify_timeout=30,
    )


def test_history_shows_each_revision_its_outcomes_and_the_diff(home: GuardHome) -> None:
    writer = committing_writer(home)
    first = restart(writer)
    ok, failed = RunStatus.verified, RunStatus.failed
    runs(home, first.name, [ok, ok, failed, failed], utcnow() - timedelta(minutes=10))
    second = compose(writer)
    runs(home, first.name, [ok], utcnow() + timedelta(seconds=2))

    got = json.loads(home.cli("skills", "history", first.name, "--json", "--diff").stdout)
    assert got["name"] == first.name and got["revision"] == 2
    one, two = got["revisions"]
    assert (one["revision"], one["commit"], one["made_by"]) == (
        1,
        first.commit,
        "learned from incident #7",
    )
    assert (two["revision"], two["commit"], two["made_by"]) == (
        2,
        second.commit,
        "learned from incident #9",
    )
    assert one["by"] == "cli:alice" and two["by"] == "cli:bob"
    assert (one["outcomes"]["runs"], one["outcomes"]["consecutive_failures"]) == (4, 2)
    assert (two["outcomes"]["runs"], two["outcomes"]["verified"]) == (1, 1)
    assert one["steps"][0] == "docker.restart container={{ incident.target }}"
    assert "-- action: docker.restart" in two["diff"] and "+- run: scripts/fix.sh" in two["diff"]
    assert "#!/bin/sh" in two["diff"]  # the new script, as a diff too

    text = home.cli("skills", "history", first.name, "--diff").stdout
    assert f"revision 1  {one['at'][:10]}" in text and "learned from incident #7" in text
    assert "4 run(s): 2 verified, 2 failed" in text and "1 run(s): 1 verified" in text
    assert "+- run: scripts/fix.sh" in text
    assert "-- action" not in home.cli("skills", "history", first.name).stdout

    missing = home.cli("skills", "history", "nope", check=False)
    assert missing.returncode != 0 and "no skill named 'nope'" in missing.stderr


def test_a_revision_merged_after_review_counts_its_runs_from_the_merge(home: GuardHome) -> None:
    """As the ladder counts it: a revision reviewed in git began when it was merged, so the runs
    between its commit and its merge are the revision before's."""
    writer = committing_writer(home)
    first = restart(writer)
    second = compose(writer)
    merged = utcnow() + timedelta(minutes=5)
    ReviewBook(home.root / "skills").put(
        first.name,
        Review(
            status="merged",
            branch=f"guard/revise/{first.name}/2",
            commit=second.commit,
            revision=2,
            merged_at=merged.isoformat(),
        ),
    )
    ok = RunStatus.verified
    runs(home, first.name, [ok, ok], utcnow() + timedelta(minutes=1))  # committed, not merged
    runs(home, first.name, [ok], merged + timedelta(minutes=1))

    got = json.loads(home.cli("skills", "history", first.name, "--json").stdout)
    one, two = got["revisions"]
    assert (one["outcomes"]["runs"], two["outcomes"]["runs"]) == (2, 1), got
