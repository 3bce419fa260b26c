"""Proposed promotions through a real git remote (a bare repository): a demoted skill's
proposal is a commit with no change to its files, whose merge lifts the demotion; a proposal
whose branch is deleted unmerged is dropped; both audited."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlmodel import select

from guard.skills.promotion import PREFIX, settle
from guard.skills.sync import SkillsRemote
from guard.store.db import Database, open_database
from guard.store.ladder import DEMOTED, PROPOSED, LadderStep
from guard.store.models import AuditEntry
from tests.fakes.git import bare_repo, git, reviewer_clone
from tests.helpers.agent import REPO
from tests.skills.test_skills_remote import settings

SKILL = "docker-start-exited"  # trust: trusted in its file


def proposed(db: Database, *steps: str) -> None:
    with db.session() as s:
        for step in steps:
            s.add(LadderStep(skill=SKILL, step=step, reason=f"{step}: 3 verified recoveries"))


def ladder(db: Database) -> list[tuple[str, str]]:
    with db.session() as s:
        return [(r.step, r.outcome) for r in s.exec(select(LadderStep)).all()]


def audited(db: Database) -> list[str]:
    with db.session() as s:
        return [e.action for e in s.exec(select(AuditEntry)).all()]


def setup(tmp_path: Path) -> tuple[SkillsRemote, Database, Path, Path]:
    bare = bare_repo(tmp_path / "srv")
    remote = SkillsRemote(settings(tmp_path, f"file://{bare}"))
    remote.sync()
    db = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    return remote, db, bare, reviewer_clone(bare, tmp_path / "rita")


def test_a_demoted_skills_promotion_merged_lifts_the_demotion(tmp_path: Path) -> None:
    remote, db, bare, rita = setup(tmp_path)
    proposed(db, DEMOTED, PROPOSED)
    sent = settle(remote, db, REPO / "skills")
    assert sent.errors == [] and sent.notes == [
        f"skill {SKILL} proposed for trust: trusted, for review: {PREFIX}{SKILL}"
    ]
    assert settle(remote, db, REPO / "skills").notes == []  # sent once
    message = git("log", "-1", "--format=%B", f"{PREFIX}{SKILL}", cwd=bare)
    assert message.startswith(f"guard: promote skill {SKILL} to trust: trusted")
    files = git("show", f"{PREFIX}{SKILL}:{SKILL}/skill.yaml", cwd=bare)
    assert "trust: trusted" in files  # the starter skill, now in the team's repository
    git("fetch", "-q", "origin", cwd=rita)
    git("merge", "--no-ff", "-q", "-m", "Trust it again", f"origin/{PREFIX}{SKILL}", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    remote.sync()  # the fast-forward brings the merge
    merged = settle(remote, db, REPO / "skills")
    assert merged.notes == [
        f"the promotion of {SKILL} was merged: skill {SKILL} runs unasked from now on"
    ]
    assert sorted(ladder(db)) == [(DEMOTED, "lifted"), (PROPOSED, "merged")]
    assert audited(db) == ["skill.promotion_sent", "skill.promoted"]


def test_a_promotion_whose_branch_is_deleted_unmerged_is_dropped(tmp_path: Path) -> None:
    remote, db, bare, _ = setup(tmp_path)
    shutil.copytree(REPO / "skills" / SKILL, remote.root / SKILL)
    proposed(db, PROPOSED)
    assert settle(remote, db).errors == []
    git("branch", "-D", f"{PREFIX}{SKILL}", cwd=bare)
    remote.sync()  # --prune: the remote branch is gone
    dropped = settle(remote, db)
    assert dropped.notes == [
        f"the promotion of {SKILL} was dropped (its branch was deleted unmerged)"
    ]
    assert ladder(db) == [(PROPOSED, "dropped")]
    assert audited(db) == ["skill.promotion_sent", "skill.promotion_dropped"]
