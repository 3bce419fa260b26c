"""A skill's history, for ``guard skills history NAME``: its revisions (read from the skills git
repository, each commit that touched its folder, grouped by the ``revision`` its skill.yaml gave
then), what made each one (learned from incident #N, promoted, edited), the outcomes of each
revision (its runs from its start to the next one's, ``guard.skills.outcomes``), and the diff
of the steps and scripts from the revision before.

A skill outside git (``skills.git_commit: false``, or a starter skill) has one entry: its files
as they are, with no commit.
"""

from __future__ import annotations

import difflib
import itertools
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session

from guard.skills.files import NO_SYMLINKS
from guard.skills.library import Skill
from guard.skills.model import SkillSpec
from guard.skills.outcomes import Outcome, outcomes
from guard.skills.revisions import start

_SEP = "\x1f"
_LEARNED = re.compile(
    r"^guard: (?:learn|revise) skill \S+ (?:\(revision \d+\) )?from incident #(\d+)"
)


@dataclass
class Revision:
    """One revision: its first commit says when and what made it."""

    revision: int
    at: datetime | None
    made_by: str
    by: str  # the approver of a learned revision
    commit: str | None
    spec: SkillSpec
    scripts: dict[str, str] = field(default_factory=dict)
    commits: list[dict[str, str]] = field(default_factory=list)
    outcome: Outcome | None = None
    diff: str = ""

    def as_dict(self, with_diff: bool) -> dict[str, Any]:
        found: dict[str, Any] = {
            "revision": self.revision,
            "at": self.at.isoformat() if self.at else None,
            "made_by": self.made_by,
            "by": self.by,
            "commit": self.commit,
            "commits": self.commits,
            "trust": self.spec.trust,
            "steps": [s.describe() for s in self.spec.steps],
            "outcomes": self.outcome.as_dict() if self.outcome else None,
            "summary": self.outcome.summary() if self.outcome else "",
        }
        if with_diff:
            found["diff"] = self.diff
        return found


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *NO_SYMLINKS, *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def made_by(subject: str) -> str:
    """What a commit's subject says made it."""
    learned = _LEARNED.match(subject)
    if learned:
        return f"learned from incident #{learned.group(1)}"
    if subject.startswith("guard: promote skill"):
        return "promoted"
    if subject.startswith("guard: track skill"):  # committed as it was, before a promotion
        return "tracked"
    return "edited"


def _files_at(folder: Path, commit: str) -> tuple[SkillSpec, dict[str, str]] | None:
    shown = _git(folder, "show", f"{commit}:./skill.yaml")
    if shown.returncode != 0:
        return None  # the folder was deleted by this commit
    try:
        spec = SkillSpec.model_validate(yaml.safe_load(shown.stdout) or {})
    except Exception:
        return None  # a commit whose skill.yaml did not load: not a revision that ran
    scripts = {}
    listed = _git(folder, "ls-tree", "--name-only", commit, "--", "scripts/")
    for path in listed.stdout.splitlines() if listed.returncode == 0 else []:
        name = path.rpartition("/")[2]
        if name != ".keep":
            scripts[name] = _git(folder, "show", f"{commit}:./scripts/{name}").stdout
    return spec, scripts


def revisions(skill: Skill) -> list[Revision]:
    """``skill``'s revisions, oldest first."""
    log = _git(skill.path, "log", "--reverse", f"--format=%H{_SEP}%aI{_SEP}%s", "--", ".")
    found: list[Revision] = []
    for line in log.stdout.splitlines() if log.returncode == 0 else []:
        commit, at, subject = line.split(_SEP, 2)
        files = _files_at(skill.path, commit)
        if files is None:
            continue
        spec, scripts = files
        entry = {"commit": commit, "at": at, "subject": subject, "made_by": made_by(subject)}
        if found and found[-1].revision == spec.revision:
            found[-1].commits.append(entry)
            found[-1].spec, found[-1].scripts = spec, scripts
            continue
        by = str((spec.learned_from or {}).get("approver", ""))
        when = datetime.fromisoformat(at)
        found.append(
            Revision(spec.revision, when, made_by(subject), by, commit, spec, scripts, [entry])
        )
    if not found:  # not in git: the files as they are
        by = str((skill.spec.learned_from or {}).get("approver", ""))
        found.append(
            Revision(skill.spec.revision, start(skill), skill.spec.origin, by, None, skill.spec)
        )
    for before, after in itertools.pairwise(found):
        after.diff = diff(before, after)
    return found


def diff(before: Revision, after: Revision) -> str:
    """The steps' (and scripts') unified diff from ``before`` to ``after``."""
    steps = [
        yaml.safe_dump(r.spec.model_dump(mode="json", exclude_defaults=True)["steps"])
        for r in (before, after)
    ]
    lines = list(
        difflib.unified_diff(
            steps[0].splitlines(),
            steps[1].splitlines(),
            f"revision {before.revision}",
            f"revision {after.revision}",
            lineterm="",
        )
    )
    for name in sorted(set(before.scripts) | set(after.scripts)):
        lines += difflib.unified_diff(
            before.scripts.get(name, "").splitlines(),
            after.scripts.get(name, "").splitlines(),
            f"a/scripts/{name}",
            f"b/scripts/{name}",
            lineterm="",
        )
    return "\n".join(lines)


def with_outcomes(session: Session, skill: Skill, found: list[Revision]) -> list[Revision]:
    """Each revision's outcomes: its runs from its start to the next revision's (the live
    revision starts where the ladder counts it from: ``revisions.start``, its merge when it was
    reviewed in git)."""
    name = skill.name

    def began(rev: Revision) -> datetime | None:
        return start(skill) if rev.revision == skill.spec.revision else _began(rev)

    for n, rev in enumerate(found):
        began_at = began(rev) if n else None
        ends = began(found[n + 1]) if n + 1 < len(found) else None
        rev.outcome = outcomes(
            session,
            [name],
            since={name: began_at} if began_at else None,
            until={name: ends} if ends else None,
        )[name]
    return found


def _began(rev: Revision) -> datetime | None:
    """When a past revision began counting: its ``learned_from.at`` (as the ladder counted
    it), else its first commit."""
    at = (rev.spec.learned_from or {}).get("at")
    try:
        return datetime.fromisoformat(str(at)) if at and rev.revision > 1 else rev.at
    except ValueError:
        return rev.at
