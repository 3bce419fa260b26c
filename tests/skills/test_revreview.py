"""Revisions under review in git (issue 46, ``skills.review: branch|pr``): a human's fix for a
fault a skill on ``git_branch`` covers is that skill's next revision committed to its own
branch, never a second skill; the old revision runs until a reviewer merges it; deleted
unmerged, it is dropped; committed but not noted before a crash, it is noted again from its
commit. Real git (a bare repository as the remote), a real store, the real CLI, and a real
``guard run`` whose HTTP check a local service answers."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import select

from guard.config import Settings
from guard.skills.library import SkillLibrary
from guard.skills.remote import SkillsRemote, publish_learned
from guard.skills.review import ReviewBook
from guard.skills.revisions import start
from guard.skills.writer import LearnedSkill
from guard.store.db import open_database
from guard.store.models import AuditEntry
from tests.conftest import GuardHome
from tests.fakes.forge import GitHubServer
from tests.fakes.git import bare_repo, git, reviewer_clone
from tests.helpers.agent import find, running_guard, show, wait_for
from tests.skills.test_skills_remote import TOKEN, incident, learn, settings, writer_for
from tests.skills.test_skills_remote import github as github  # the fixture
from tests.skills.test_skills_review import Service, configure, next_incident, skills_listed
from tests.skills.test_skills_review import svc as svc  # the fixture


def revise(
    s: Settings, remote: SkillsRemote, library: SkillLibrary, name: str, n: int
) -> LearnedSkill:
    """Incident ``n``: skill ``name`` ran and failed; the human's new fix cured it."""
    learned = writer_for(s, remote, library).write(
        incident(n),
        "http.request url=http://svc/restart method=POST",
        action="http.request",
        args={"url": "http://svc/restart", "method": "POST"},
        approver="cli:bob",
        verdict="GET http://svc/healthz answered 200",
        revises=[name],  # what the learner passes: the skills that ran on the incident
    )
    publish_learned(remote, learned, library)
    return learned


def merged_skill(
    home: GuardHome, tmp_path: Path, **skills: Any
) -> tuple[Settings, SkillsRemote, Path, str]:
    """A learned skill reviewed and merged into main: it covers the fault."""
    bare = bare_repo(tmp_path / "srv")
    s = settings(home.root, f"file://{bare}", **skills)
    home.write_config({"skills": {"git_remote": f"file://{bare}", "git_author": "Guard <g@t>"}})
    remote = SkillsRemote(s)
    remote.sync()
    _, first, _ = learn(s, remote)
    rita = reviewer_clone(bare, tmp_path / "rita")
    git("merge", "--no-ff", "-q", "-m", "Merge", f"origin/guard/learned/{first.name}", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    assert remote.sync().errors == []
    return s, remote, rita, first.name


def test_a_fix_for_a_reviewed_skill_is_its_next_revision_on_a_review_branch(
    home: GuardHome, tmp_path: Path
) -> None:
    s, remote, rita, name = merged_skill(home, tmp_path)
    library = SkillLibrary(s.skills_dir)
    live = library.get(name)
    assert live is not None and live.runs_unasked and live.spec.revision == 1

    learned = revise(s, remote, library, name, 8)

    assert learned.name == name and learned.revision == 2  # not a second skill
    names = {x["name"] for x in json.loads(home.cli("skills", "list", "--json").stdout)}
    assert sorted(n for n in names if n.startswith("learned-")) == [name]
    assert not [p for p in s.skills_dir.glob(".review/*") if p.name.startswith(f"{name}-")]
    branch = f"guard/revise/{name}/2"
    assert learned.branch == branch
    bare = s.skills.git_remote.removeprefix("file://")  # type: ignore[union-attr]
    proposed = yaml.safe_load(git("show", f"{branch}:{name}/skill.yaml", cwd=Path(bare)))
    assert proposed["revision"] == 2 and proposed["trust"] == "approval"
    assert proposed["steps"][0]["args"]["method"] == "POST"
    message = git("log", "-1", "--format=%B", branch, cwd=Path(bare))
    assert message.startswith(f"guard: revise skill {name} (revision 2) from incident #8")
    assert "--- revision 1\n+++ revision 2" in message and "+    method: POST" in message
    on_main = yaml.safe_load(git("show", f"main:{name}/skill.yaml", cwd=Path(bare)))
    assert on_main.get("revision", 1) == 1 and "method" not in on_main["steps"][0]["args"]

    # until it is merged the old revision runs as it did, and the proposal is shown with it
    library.refresh()
    live = library.get(name)
    assert live is not None and live.spec.revision == 1 and live.runs_unasked
    assert f"revision 2 under review: {branch}" in live.offer_text()
    listed = {x["name"]: x for x in json.loads(home.cli("skills", "list", "--json").stdout)}
    assert listed[name]["revision"] == 1 and listed[name]["branch"] == branch
    assert remote.sync().errors == []  # nothing settles while the branch waits
    another = revise(s, remote, library, name, 9)  # one proposal at a time: not saved
    assert (another.existed, another.branch, another.commit) == (True, branch, None)
    assert library.get(name).spec.revision == 1  # type: ignore[union-attr]

    git("fetch", "-q", cwd=rita)
    git("merge", "--no-ff", "-q", "-m", "Merge revision 2", f"origin/{branch}", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    synced = home.cli("skills", "sync")
    assert f"skill {name} revision 2 was merged into main" in synced.stdout
    assert library.refresh()
    live = library.get(name)
    assert live is not None and live.spec.revision == 2 and live.spec.trust == "approval"
    learned_at = datetime.fromisoformat(str(live.spec.learned_from["at"]))  # type: ignore[index]
    began = start(live)  # its counts start at the merge: revision 1 ran until then
    assert began is not None and began > learned_at
    assert not (s.skills_dir / ".review" / name).exists()
    history = home.cli("skills", "history", name, "--diff").stdout
    assert f"skill {name}: 2 revision(s)" in history
    assert "revision 2" in history and "+    method: POST" in history
    db = open_database(s.database_url, read_only=True)
    try:
        with db.session() as session:
            revised = session.exec(
                select(AuditEntry).where(AuditEntry.action == "skill.revised")
            ).all()
    finally:
        db.dispose()
    assert [(e.subject, e.data["revision"]) for e in revised] == [(f"skill:{name}", 2)]


def test_a_revision_deleted_unmerged_is_dropped_and_one_noted_nowhere_is_recovered(
    home: GuardHome, tmp_path: Path
) -> None:
    s, remote, _, name = merged_skill(home, tmp_path)
    library = SkillLibrary(s.skills_dir)
    bare = Path(s.skills.git_remote.removeprefix("file://"))  # type: ignore[union-attr]
    first = revise(s, remote, library, name, 8)
    git("branch", "-D", str(first.branch), cwd=bare)
    result = remote.sync()
    assert f"skill {name} revision 2: its branch {first.branch} was deleted" in " ".join(
        result.notes
    )
    assert library.refresh() and library.get(name).spec.revision == 1  # type: ignore[union-attr]
    assert ReviewBook(s.skills_dir).get(name).status == "rejected"  # type: ignore[union-attr]

    book = ReviewBook(s.skills_dir)
    before = book.get(name)
    again = revise(s, remote, library, name, 9)  # a later fix: revision 2 again
    assert again.revision == 2 and again.commit != first.commit
    saved = book.get(name)
    assert before is not None
    book.put(name, before)  # as if Guard died right after the commit: no note, no folder
    shutil.rmtree(s.skills_dir / ".review" / name)
    result = remote.sync()
    assert result.errors == []
    assert f"skill {name} recovered from its branch {again.branch}" in " ".join(result.notes)
    entry = book.get(name)
    assert saved is not None and entry is not None
    assert (entry.status, entry.revision, entry.branch, entry.incident, entry.fix) == (
        "pending",
        2,
        again.branch,
        9,
        saved.fix,
    )
    assert library.refresh()
    live = library.get(name)
    assert live is not None and live.spec.revision == 1
    assert (s.skills_dir / ".review" / name / "skill.yaml").is_file()


def test_with_review_pr_a_revision_opens_a_pull_request_holding_its_diff(
    home: GuardHome, tmp_path: Path, github: GitHubServer
) -> None:
    s, remote, _, name = merged_skill(
        home, tmp_path, review="pr", forge="github", forge_api_url=github.url, git_token=TOKEN
    )
    library = SkillLibrary(s.skills_dir)
    learned = revise(s, remote, library, name, 8)
    post = [c for c in github.calls if c["method"] == "POST"][-1]["json"]
    assert post["head"] == f"guard/revise/{name}/2" and post["base"] == "main"
    assert post["title"] == f"guard: revise skill {name} (revision 2) from incident #8"
    assert "--- revision 1\n+++ revision 2" in post["body"] and "+    method: POST" in post["body"]
    url = "https://github.test/acme/skills/pull/2"
    library.refresh()
    live = library.get(name)
    assert live is not None and live.spec.revision == 1
    assert f"revision 2 under review: {url}, from incident #8" in live.offer_text()
    assert learned.branch == post["head"]

    github.pulls[-1]["state"] = "closed"  # the reviewer closed it unmerged
    result = remote.sync()
    assert result.errors == []
    assert (
        f"skill {name} revision 2: its pull request {url} was closed unmerged; revision 1 "
        "keeps running" in result.notes
    )
    assert not (s.skills_dir / ".review" / name).exists()


@pytest.mark.timeout(300)  # two learnings settling agent.settle, two merges: ~1.5 min alone
def test_a_guard_run_proposes_the_fix_for_a_failing_reviewed_skill_as_its_revision_2(
    home: GuardHome, svc: Service, tmp_path: Path
) -> None:
    bare = bare_repo(tmp_path / "srv")
    configure(home, svc, f"file://{bare}", "")
    svc.healthy = False
    rita = reviewer_clone(bare, tmp_path / "rita")
    with running_guard(home):
        first = wait_for(
            lambda: find(home, monitor_id="web", state="awaiting_human"), 40, "the first question"
        )
        home.cli("reply", str(first["id"]), "--", "http.request", f"url={svc.base}/fix")
        name = show(home, first["id"])["details"]["learned_skill"]
        git("fetch", "-q", cwd=rita)
        git("merge", "--no-ff", "-q", "-m", "Merge", f"origin/guard/learned/{name}", cwd=rita)
        git("push", "-q", "origin", "main", cwd=rita)
        wait_for(lambda: skills_listed(home)[name]["review"] == "merged", 30, "the merge")

        svc.cures = {"/restart"}  # the fault changed: the skill's fix no longer cures it
        second = next_incident(home, svc, first["id"])
        wait_for(
            lambda: show(home, second["id"])["state"] in ("awaiting_human", "escalated"),
            90,
            "the skill to fail and the human to be asked",
        )
        reply = home.cli(
            "reply", str(second["id"]), "--", "http.request", f"url={svc.base}/restart"
        )
        branch = f"guard/revise/{name}/2"
        assert f"proposed as revision 2 of skill {name}" in reply.stdout
        assert f"revision 1 runs until it is merged; under review: {branch}" in reply.stdout
        assert f"-    url: {svc.base}/fix\n+    url: {svc.base}/restart" in reply.stdout
        assert [n for n in skills_listed(home) if n.startswith("learned-")] == [name]
        assert yaml.safe_load(git("show", f"{branch}:{name}/skill.yaml", cwd=bare))["revision"] == 2
        assert "revision" not in yaml.safe_load(git("show", f"main:{name}/skill.yaml", cwd=bare))
        assert skills_listed(home)[name]["revision"] == 1

        git("fetch", "-q", cwd=rita)
        git("merge", "--no-ff", "-q", "-m", "Merge revision 2", f"origin/{branch}", cwd=rita)
        git("push", "-q", "origin", "main", cwd=rita)
        wait_for(lambda: skills_listed(home)[name]["revision"] == 2, 30, "revision 2 to go live")
        history = home.cli("skills", "history", name, "--diff").stdout
    assert f"skill {name}: 2 revision(s)" in history
    assert f"learned from incident #{second['id']}" in history
    assert f"-    url: {svc.base}/fix\n  +    url: {svc.base}/restart" in history
