"""A revision under review in git (``skills.review: branch|pr``): a human's fix for a fault a
skill on ``git_branch`` covers is that skill's next revision, proposed, not a second skill.

The writer drafts it as any revision (``guard.skills.revisions``: the same name, ``revision:
n+1``, the steps diff in the commit message); ``propose`` commits it on top of ``git_branch``
to its own branch
``guard/revise/<name>/<n>`` (``-2``, ``-3`` when that name was used already), keeps its folder
in ``.review/<name>/`` and notes it in the review book (``revision: n``). Until it is merged the
old revision runs as it is (its trust and ladder unchanged); the proposal is shown with it when
it is offered. At each sync (``guard.skills.sync``, its ``_settle_revision`` and
``_recover_revisions``):

- merged (its commit, or a skill.yaml of that revision or later, on ``git_branch``):
  it takes effect like any revision (``SyncResult.revised``: ``close_steps`` with the store);
  its branch deleted (or its pull request closed) unmerged: dropped, its local branch too;
- a revision branch with no note (Guard died between the commit and the note) is
  noted again from its commit message, its folder brought back to ``.review/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from guard.skills.gitrepo import Git
from guard.skills.library import Skill, SkillLibrary
from guard.skills.review import REVISE_PREFIX, Review, ReviewBook, review_dir
from guard.skills.revisions import Draft, LearnedSkill


def waiting(root: Path, skill: Skill) -> LearnedSkill | None:
    """The revision of ``skill`` already under review, if any (one at a time)."""
    entry = ReviewBook(root).get(skill.name)
    if entry is None or entry.status != "pending" or not entry.revision:
        return None
    folder = review_dir(root) / skill.name
    return LearnedSkill(
        skill.name, folder, None, existed=True, branch=entry.branch, revision=entry.revision
    )


def propose(library: SkillLibrary, author: str, draft: Draft) -> LearnedSkill:
    """Commit the revision ``draft`` to a review branch on top of ``git_branch``, keep its
    folder in ``.review/`` and note it as pending review."""
    name, n, d = draft.skill.name, draft.revision, draft
    folder = review_dir(library.folder) / name
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
        draft.staging.rename(folder)
    finally:
        shutil.rmtree(draft.staging, ignore_errors=True)
    git = Git(library.folder, author=author)
    branch = free_branch(git, name, n)
    try:
        commit = git.commit_beside(folder, f"refs/heads/{branch}", draft.message)
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)  # not committed: not proposed
        raise
    ReviewBook(library.folder).put(
        name,
        Review.pending(
            branch, commit, d.incident, d.fix, d.approver, d.verdict, revision=n, diff=d.diff
        ),
    )
    library.reload()
    return LearnedSkill(name, folder, commit, branch=branch, revision=n, diff=d.diff)


def free_branch(git: Git, name: str, revision: int) -> str:
    """``guard/revise/NAME/N``, or with ``-2``, ``-3``... when a branch of that name exists here
    or on the remote (a proposal closed but not deleted stays what it was)."""
    base = f"{REVISE_PREFIX}{name}/{revision}"
    branch, n = base, 2
    while git.rev(f"refs/heads/{branch}") or git.rev(f"refs/remotes/origin/{branch}"):
        branch, n = f"{base}-{n}", n + 1
    return branch


def revision_at(git: Git, ref: str, name: str) -> int:
    """The ``revision`` of skill ``name`` in ``ref`` (0: not there)."""
    shown = git.run("show", f"{ref}:{name}/skill.yaml", check=False)
    if shown.returncode != 0:
        return 0
    try:
        spec = yaml.safe_load(shown.stdout) or {}
        return int(spec.get("revision", 1)) if isinstance(spec, dict) else 0
    except (yaml.YAMLError, TypeError, ValueError):
        return 0


def merged(git: Git, name: str, commit: str | None, revision: int) -> bool:
    """Whether the revision is on ``git_branch`` (merged, squashed, or a later one there)."""
    if commit and git.ok("merge-base", "--is-ancestor", commit, "HEAD"):
        return True
    return revision_at(git, "HEAD", name) >= revision
