"""The skills remote without the agent: config, clone, pull requests (GitHub's REST shapes),
the token's whereabouts, and a rejected push (issue 18).

Real git throughout: bare repositories on disk (file:// URLs) and ``git http-backend`` behind a
local HTTP server that demands the token.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from guard.config import Settings, basic_credentials
from guard.domain.exceptions import SkillsRemoteError
from guard.notify.answers.commands import skills_text
from guard.notify.telegram.markup import HtmlMarkup
from guard.skills.forge import build_forge, repo_path
from guard.skills.library import SkillLibrary
from guard.skills.remote import SkillsRemote, publish_learned
from guard.skills.review import ReviewBook
from guard.skills.writer import LearnedSkill, SkillWriter
from tests.conftest import GuardHome
from tests.fakes.forge import GitHubServer, GitLabServer
from tests.fakes.git import GitServer, bare_repo, git, reviewer_clone
from tests.helpers.agent import find, running_guard, wait_for

TOKEN = "ghp_" + "Zq7" * 12  # the shape of a GitHub token, so redaction rules know it too


def incident(n: int = 7, target: str = "http://svc") -> Any:
    return SimpleNamespace(
        id=n,
        source="http",
        kind="http_status",
        target=target,
        message="GET /healthz answered 503",
        title=f"http status on {target}",
        severity="critical",
    )


def settings(root: Path, remote: str, **skills: Any) -> Settings:
    return Settings(
        data_dir=root / "data",
        skills_dir=root / "skills",
        playbooks_dir=root / "playbooks",
        skills={"git_remote": remote, "git_author": "Guard <guard@test>", **skills},
    )


def writer_for(s: Settings, remote: SkillsRemote, library: SkillLibrary) -> SkillWriter:
    """The agent's writer for ``s`` (under review unless ``review: direct``)."""
    return SkillWriter(
        library,
        trust=s.skills.learned_trust,
        git_commit=True,
        git_author=s.skills.git_author,
        verify_timeout=5,
        review=s.skills.review != "direct",
        taken=remote.taken,
    )


def learn(s: Settings, remote: SkillsRemote, n: int = 7) -> tuple[SkillLibrary, LearnedSkill, str]:
    """Learn a fix as the agent does (write, commit, publish); returns the message's tail."""
    library = SkillLibrary(s.skills_dir)
    learned = writer_for(s, remote, library).write(
        incident(n),
        "http.request url=http://svc/fix",
        action="http.request",
        args={"url": "http://svc/fix"},
        approver="cli:ann",
        verdict="GET http://svc/healthz answered 200",
    )
    return library, learned, publish_learned(remote, learned, library)


@pytest.fixture
def github() -> Iterator[GitHubServer]:
    server = GitHubServer(token=TOKEN)
    yield server
    server.close()


@pytest.fixture
def git_http(tmp_path: Path) -> Iterator[GitServer]:
    server = GitServer(tmp_path / "srv", token=TOKEN)
    yield server
    server.close()


def test_bad_settings_name_the_field(tmp_path: Path) -> None:
    cases = [
        ({"git_remote": "ftp://example.com/x.git"}, "skills.git_remote"),
        ({"git_remote": f"https://x:{TOKEN}@github.com/acme/s.git"}, "skills.git_token"),
        ({"review": "pr"}, "skills.review 'pr' needs skills.git_remote"),
        ({"git_remote": "file:///x", "git_branch": "../main"}, "skills.git_branch"),
    ]
    for skills, expected in cases:
        with pytest.raises(ValueError) as info:
            Settings(data_dir=tmp_path, skills=skills)
        assert expected in str(info.value)
        assert TOKEN not in str(info.value)
    assert Settings(data_dir=tmp_path, skills={"git_remote": "file:///x"}).skills.review == "branch"
    assert Settings(data_dir=tmp_path).skills.review == "direct"
    assert Settings(data_dir=tmp_path, skills={"git_remote": "git@github.com:acme/s.git"})


def test_clone_at_start_and_a_clone_of_another_remote_is_named(
    tmp_path: Path, home: GuardHome
) -> None:
    bare = bare_repo(tmp_path / "srv")
    s = settings(tmp_path, f"file://{bare}")
    result = SkillsRemote(s).sync()
    assert result.errors == [] and "cloned" in result.notes[0]
    assert (s.skills_dir / "README.md").is_file()
    other = bare_repo(tmp_path / "srv", "acme/other.git")
    wrong = settings(tmp_path, f"file://{other}")
    with pytest.raises(SkillsRemoteError, match=r"tracks origin .* not skills\.git_remote"):
        SkillsRemote(wrong).ensure()
    home.write_config(
        {"skills_dir": str(s.skills_dir), "skills": {"git_remote": f"file://{other}"}}
    )
    check = home.cli("check-config", check=False)
    assert check.returncode == 2
    assert "skills.git_remote: skills_dir" in check.stderr and "remote set-url" in check.stderr


def test_branch_mode_pushes_to_its_own_branch_and_a_merge_or_a_revert_reaches_guard(
    tmp_path: Path, home: GuardHome
) -> None:
    bare = bare_repo(tmp_path / "srv")
    s = settings(tmp_path, f"file://{bare}")
    remote = SkillsRemote(s)
    remote.sync()
    library, learned, said = learn(s, remote)
    branch = f"guard/learned/{learned.name}"
    assert said == f"; under review: {branch}"
    assert git("ls-tree", "--name-only", "main", cwd=bare) == "README.md"  # main untouched
    assert learned.name in git("ls-tree", "--name-only", branch, cwd=bare)
    skill = library.get(learned.name)
    assert skill is not None and skill.pending and not skill.runs_unasked
    assert skill.spec.trust == "trusted"  # what it becomes once merged

    home.write_config({"skills_dir": str(s.skills_dir), "skills": {"git_remote": f"file://{bare}"}})
    listed = {x["name"]: x for x in json.loads(home.cli("skills", "list", "--json").stdout)}
    assert listed[learned.name]["review"] == "pending"
    assert listed[learned.name]["branch"] == branch and listed[learned.name]["url"] is None
    assert listed[learned.name]["path"].endswith(f".review/{learned.name}")
    assert (
        "learned-http-status-http-svc (incident #7): " + branch
        in home.cli("report", "daily", "--print").stdout
    )
    assert f"<b>{learned.name}</b> (trusted, learned) 🔍 under review: {branch}" in skills_text(
        s, HtmlMarkup()
    )  # Telegram's /skills

    rita = reviewer_clone(bare, tmp_path / "rita")
    git("merge", "--no-ff", "-q", "-m", "Merge the learned skill", f"origin/{branch}", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    result = remote.sync()
    assert result.errors == []
    assert f"skill {learned.name} was merged into main" in " ".join(result.notes)
    assert library.refresh()
    skill = library.get(learned.name)
    assert skill is not None and skill.runs_unasked and not skill.pending
    assert skill.path == s.skills_dir / learned.name
    listed = {x["name"]: x for x in json.loads(home.cli("skills", "list", "--json").stdout)}
    assert listed[learned.name]["review"] == "merged"
    assert f"<b>{learned.name}</b> (trusted, learned) (reviewed and merged)" in skills_text(
        s, HtmlMarkup()
    )

    git("revert", "-m", "1", "--no-edit", "HEAD", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    synced = home.cli("skills", "sync")
    assert f"skill {learned.name} was removed from main" in synced.stdout
    assert library.refresh() and library.get(learned.name) is None
    assert learned.name not in home.cli("skills", "list", "--json").stdout


def test_a_branch_deleted_unmerged_is_rejected_and_its_name_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = bare_repo(tmp_path / "srv")
    monkeypatch.chdir(tmp_path)
    s = settings(Path("."), f"file://{bare}")  # relative paths, as in the README's guard.yaml
    assert not s.skills_dir.is_absolute()
    remote = SkillsRemote(s)
    remote.sync()
    library, learned, _ = learn(s, remote)
    git("branch", "-D", f"guard/learned/{learned.name}", cwd=bare)
    result = remote.sync()
    assert f"its branch guard/learned/{learned.name} was deleted" in " ".join(result.notes)
    assert library.refresh() and library.get(learned.name) is None
    again = learn(s, remote, n=8)[1]  # the same lesson again is a new skill, a new branch
    assert again.name == f"{learned.name}-2"
    assert git("rev-parse", f"guard/learned/{learned.name}", cwd=s.skills_dir) == learned.commit


def test_pr_mode_opens_a_pull_request_naming_the_incident_and_the_fix(
    tmp_path: Path, home: GuardHome, github: GitHubServer
) -> None:
    bare = bare_repo(tmp_path / "srv")
    s = settings(
        tmp_path,
        f"file://{bare}",
        review="pr",
        forge="github",
        forge_api_url=github.url,
        git_token=TOKEN,
    )
    remote = SkillsRemote(s)
    remote.sync()
    library, learned, said = learn(s, remote)
    [post] = [c for c in github.calls if c["method"] == "POST"]
    assert post["path"] == "/repos/acme/skills/pulls"
    assert post["headers"]["Authorization"] == f"Bearer {TOKEN}"
    body = post["json"]
    assert body["head"] == f"guard/learned/{learned.name}" and body["base"] == "main"
    assert "incident #7" in body["title"]
    assert "#7 http status on http://svc" in body["body"]
    assert "`http.request url=http://svc/fix`" in body["body"]
    assert "answered 200" in body["body"]  # the evidence
    url = "https://github.test/acme/skills/pull/1"
    assert said == f"; under review: {url}"
    skill = library.get(learned.name)
    assert skill is not None and skill.offer_text().startswith(
        f"learned from incident #7, under review: {url}. "
    )

    # The pull request already exists (say Guard restarted before noting it): 422, then found.
    book = ReviewBook(s.skills_dir)
    entry = book.get(learned.name)
    assert entry is not None
    book.put(learned.name, replace(entry, pr=None, url=None))
    assert remote.sync().errors == []
    assert [c["path"] for c in github.calls if c["method"] == "POST"] == [
        "/repos/acme/skills/pulls"
    ] * 2
    entry = book.get(learned.name)
    assert entry is not None and entry.pr == 1 and entry.url == url
    home.write_config({"skills_dir": str(s.skills_dir)})
    [listed] = json.loads(home.cli("skills", "list", "--json").stdout)
    assert (listed["review"], listed["url"]) == ("pending", url)

    github.pulls[0]["state"] = "closed"  # the reviewer closed it unmerged
    result = remote.sync()
    assert f"its pull request {url} was closed unmerged" in " ".join(result.notes)
    assert library.refresh() and library.get(learned.name) is None


def test_the_token_reaches_the_server_and_nowhere_else(
    tmp_path: Path, home: GuardHome, git_http: GitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare_repo(git_http.root)
    home.write_config({"skills": {"git_remote": git_http.url(), "git_author": "G <g@test>"}})
    env_home = home.root / "skills"
    refused = home.cli("skills", "sync", check=False)  # no token: the server says no
    assert refused.returncode == 1 and "set skills.git_token" in refused.stderr
    assert git_http.refused and not (env_home / ".git").exists()

    monkeypatch.setenv("GUARD_SKILLS__GIT_TOKEN", TOKEN)
    s = settings(home.root, git_http.url(), git_token=TOKEN)
    outputs = [refused.stdout, refused.stderr, home.cli("skills", "sync").stdout]
    remote = SkillsRemote(s)
    _, learned, said = learn(s, remote)
    outputs += [
        said,
        home.cli("skills", "sync").stdout,
        home.cli("skills", "list", "--json").stdout,
        home.cli("check-config", check=False).stdout,
    ]
    assert "cloned" in outputs[2] and said.startswith("; under review")
    assert learned.name in git(
        "ls-tree",
        "-r",
        "--name-only",
        f"guard/learned/{learned.name}",
        cwd=git_http.root / "acme/skills.git",
    )
    sent = {r["headers"].get("Authorization") for r in git_http.requests}
    assert f"Basic {basic_credentials(TOKEN)}" in sent
    wrong = settings(home.root, git_http.url(), git_token="not-" + TOKEN)
    failed = SkillsRemote(wrong).sync()
    assert failed.errors and "not-" + TOKEN not in failed.errors[0]
    outputs += failed.errors
    places = {"outputs": "\n".join(outputs)}
    for path in (env_home / ".git").rglob("*"):
        if path.is_file() and "objects" not in path.parts:
            places[str(path)] = path.read_text(errors="replace")
    for where, text in places.items():
        for secret in (TOKEN, basic_credentials(TOKEN)):
            assert secret not in text, where
    assert (
        TOKEN
        not in subprocess.run(
            ["git", "config", "--list", "--show-origin"],
            cwd=env_home,
            capture_output=True,
            text=True,
        ).stdout
    )


def test_a_rejected_push_keeps_the_local_commit_and_raises_an_incident(
    tmp_path: Path, home: GuardHome
) -> None:
    bare = bare_repo(tmp_path / "srv")
    s = settings(tmp_path, f"file://{bare}", review="direct")
    remote = SkillsRemote(s)
    remote.sync()
    rita = reviewer_clone(bare, tmp_path / "rita")
    (rita / "NOTES.md").write_text("reviewed by Rita\n")
    git("add", ".", cwd=rita)
    git("commit", "-q", "-m", "Rita's note", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    theirs = git("rev-parse", "main", cwd=bare)

    _, learned, said = learn(s, remote)  # committed on local main; the push is refused
    assert "not on the remote yet" in said and "non-fast-forward" in said
    assert "The local commit is kept; nothing was force-pushed" in said
    result = remote.sync()
    assert result.errors and result.errors[0].startswith("conflict: main has 1 local commit")
    assert git("rev-parse", "main", cwd=bare) == theirs  # nothing forced over Rita's work
    assert git("rev-parse", "HEAD", cwd=s.skills_dir) == learned.commit  # nothing local lost
    assert (s.skills_dir / learned.name / "skill.yaml").is_file()

    home.write_config(
        {
            "skills_dir": str(s.skills_dir),
            "http_host": "127.0.0.1",
            "http_port": 0,
            "agent": {"enabled": False},
            "skills": {"git_remote": f"file://{bare}", "review": "direct"},
        }
    )
    with running_guard(home):
        found = wait_for(lambda: find(home, kind="skills_sync_error"), 30, "the sync's incident")
    assert found["source"] == "guard" and found["state"] == "open"
    assert "conflict: main has 1 local commit(s) the remote lacks" in found["message"]
    assert git("rev-parse", "main", cwd=bare) == theirs
    assert git("rev-parse", "HEAD", cwd=s.skills_dir) == learned.commit


@pytest.mark.parametrize("kind", ["github", "gitea", "gitlab"])
def test_each_forge_opens_finds_and_reads_a_request(kind: str) -> None:
    server: GitHubServer | GitLabServer = (
        GitLabServer(TOKEN) if kind == "gitlab" else GitHubServer(TOKEN, style=kind)
    )
    remote = f"https://{kind}.example/acme/ops/skills.git"
    try:
        forge = build_forge(kind, server.url, remote, TOKEN)
        if kind != "gitlab":  # someone else's request comes first in Gitea's unfiltered list
            forge.open("feature/other", "main", "other", "not Guard's")
        first = forge.open("guard/learned/x", "main", "learn x", "incident #7, fix `true`")
        again = forge.open("guard/learned/x", "main", "learn x", "incident #7, fix `true`")
        assert again == first and first.state == "open"
        assert first.url.endswith(("/pull/2", "/merge_requests/1"))
        assert forge.state(first.number).state == "open"
        pr = server.pulls[-1]
        pr["state"] = "merged" if kind == "gitlab" else "closed"
        pr["merged"] = kind != "gitlab"
        assert forge.state(first.number).state == "merged"
        pr["merged"], pr["state"] = False, "closed"
        assert forge.state(first.number).state == "closed"
        bad = build_forge(kind, server.url, remote, "wrong-token")
        with pytest.raises(SkillsRemoteError, match="answered 401"):
            bad.open("guard/learned/y", "main", "t", "b")
    finally:
        server.close()
    assert repo_path(remote, "gitlab") == "acme/ops/skills"
    assert repo_path("git@github.com:acme/skills.git") == "acme/skills"


def test_a_skill_committed_but_not_noted_before_a_crash_is_recovered(tmp_path: Path) -> None:
    bare = bare_repo(tmp_path / "srv")
    s = settings(tmp_path, f"file://{bare}")
    remote = SkillsRemote(s)
    remote.sync()
    library, learned, _ = learn(s, remote)
    book = ReviewBook(s.skills_dir)
    saved = book.get(learned.name)
    book.save({})  # as if Guard died right after the commit: no note, no folder, not pushed
    shutil.rmtree(learned.path)
    git("push", "-q", "origin", "--delete", f"guard/learned/{learned.name}", cwd=s.skills_dir)
    result = remote.sync()
    assert result.errors == []
    assert f"skill {learned.name} recovered from its branch" in " ".join(result.notes)
    entry = book.get(learned.name)
    assert saved is not None and entry is not None
    assert (entry.incident, entry.title, entry.fix, entry.approver, entry.verified) == (
        7,
        saved.title,
        saved.fix,
        "cli:ann",
        saved.verified,
    )
    assert entry.pushed and learned.name in git(
        "ls-tree", "--name-only", f"guard/learned/{learned.name}", cwd=bare
    )
    assert library.refresh()
    skill = library.get(learned.name)
    assert skill is not None and skill.pending
    assert (learned.path / "skill.yaml").is_file()
