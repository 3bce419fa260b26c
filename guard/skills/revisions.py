"""Revisions, not duplicates: a human's fix for a fault a skill already covers is that skill's
next revision (``guard.skills.writer`` writes it, ``guard.agent.learning`` says which skill).

The skill to revise is the one that ran on the incident and failed, or the one that matched it
and was not trusted (the human sent their own fix instead), or, for any lesson, the skill whose
triggers equal the new one's; only a skill in the skills repository (``skills_dir``, not the
read-only starter skills, not one under review) is revised. The revision keeps the skill's
name, triggers, diagnostics and limits; its steps (and scripts) are the new lesson's; its
``revision`` (skill.yaml, and ``metadata.revision`` in SKILL.md) goes up by one; the old files
stay in git history and the commit message shows the steps' diff.

A revision starts over, as a senior SRE would have it: ``trust: approval`` whatever the old
trust was (new steps have not been proven), and its outcomes and ladder count only runs and
steps since ``learned_from.at`` (its start); the old revision's record stays in the store and
in ``guard skills history``. ``close_steps`` closes the old revision's live demotion and open
promotion, and clears its circuit breakers (per target), when it is written (audited
``skill.revised``); until then (a crash between the commit and that) the ladder ignores the
old steps all the same, being older than the revision.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.skills.library import Skill, SkillLibrary
from guard.skills.model import SkillSpec
from guard.store import audit
from guard.store.ladder import PROPOSED, LadderStep, open_steps
from guard.store.models import SkillBlock


@dataclass(frozen=True)
class LearnedSkill:
    """What ``SkillWriter.write`` saved: a new skill, a revision, or nothing new."""

    name: str
    path: Path
    commit: str | None  # None when git is off or the skill already existed
    existed: bool = False
    branch: str | None = None  # under review: the branch it was committed to
    revision: int = 1
    diff: str = ""  # a revision: its steps' (and scripts') diff from the one before


@dataclass(frozen=True)
class Draft:
    """A revision staged (``staging``, not yet in place), with its diff and commit message, and
    the lesson it came from."""

    skill: Skill
    revision: int
    staging: Path
    diff: str
    message: str
    incident: Any
    fix: str
    approver: str
    verdict: str


DIFF_AFTER = "(its files stay in this history)\n\n"  # a revision's commit message: the diff
KEPT = ("triggers", "diagnostics", "limits", "origin")
"""What a revision keeps of the skill it revises (the fault it covers, and how often it runs)."""


def to_revise(library: SkillLibrary, spec: SkillSpec, revises: Sequence[str] = ()) -> Skill | None:
    """The skill the lesson ``spec`` is a revision of, if any: the first of ``revises`` (the
    skills that ran on, or matched, the incident) in the skills repository, else one there
    whose triggers equal ``spec``'s."""
    mine = [s for s in library.skills if s.path.parent == library.folder and not s.pending]
    for name in revises:
        found = next((s for s in mine if s.name == name), None)
        if found is not None:
            return found
    return next((s for s in mine if s.spec.triggers == spec.triggers), None)


def revised_spec(skill: Skill, lesson: dict[str, Any]) -> dict[str, Any]:
    """``skill``'s skill.yaml as revised by ``lesson`` (a learned skill's spec): its fault and
    limits, the lesson's steps, ``trust: approval``, the next revision number."""
    old = yaml.safe_load((skill.path / "skill.yaml").read_text()) or {}
    spec = {k: old[k] for k in KEPT if k in old}
    spec.update(
        steps=lesson["steps"],
        trust="approval" if old.get("trust") != "disabled" else "disabled",
        learned_from=lesson["learned_from"],
        revision=skill.spec.revision + 1,
    )
    spec.setdefault("origin", "learned")
    return spec


def steps_diff(old: Path, new: dict[str, Any], revision: int) -> str:
    """The unified diff of the steps (and scripts) from revision ``revision - 1`` (the folder
    ``old``) to ``new`` (the revised spec, whose scripts are in ``scripts``)."""
    before = yaml.safe_load((old / "skill.yaml").read_text()) or {}
    return _diff(
        yaml.safe_dump(before.get("steps", []), sort_keys=False),
        yaml.safe_dump(new["steps"], sort_keys=False),
        revision,
    )


def script_diff(old: Path, new: Path) -> str:
    """The diff of ``scripts/`` between two folders (only the files that differ)."""
    out: list[str] = []
    names = {
        p.name for d in (old, new) if (d / "scripts").is_dir() for p in (d / "scripts").iterdir()
    }
    for name in sorted(names - {".keep"}):
        a, b = (d / "scripts" / name for d in (old, new))
        before = a.read_text() if a.is_file() else ""
        after = b.read_text() if b.is_file() else ""
        if before != after:
            out += difflib.unified_diff(
                before.splitlines(),
                after.splitlines(),
                f"a/scripts/{name}",
                f"b/scripts/{name}",
                lineterm="",
            )
    return "\n".join(out)


def _diff(before: str, after: str, revision: int) -> str:
    return "\n".join(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            f"revision {revision - 1}",
            f"revision {revision}",
            lineterm="",
        )
    )


def start(skill: Skill) -> datetime | None:
    """When ``skill``'s revision began (None: revision 1, whose record is all its runs): when
    it was learned, or when it was merged if it was reviewed in git."""
    if skill.spec.revision <= 1:
        return None
    at = (skill.spec.learned_from or {}).get("at")
    review = skill.review
    if review is not None and review.revision == skill.spec.revision and review.merged_at:
        at = review.merged_at  # reviewed in git: it began to run when it was merged
    try:
        return datetime.fromisoformat(str(at)) if at else None
    except ValueError:
        return None


def starts(skills: Iterable[Skill]) -> dict[str, datetime]:
    """Each revised skill's start, for ``outcomes(since=...)``."""
    return {s.name: at for s in skills if (at := start(s)) is not None}


def current(step: LadderStep, since: datetime | None) -> bool:
    """Whether a ladder step belongs to the skill's current revision."""
    return since is None or step.at >= since


def close_steps(session: Session, name: str, revision: int) -> int:
    """Close skill ``name``'s live demotion and open promotion, and clear its circuit breakers
    (all were about the old steps), and audit the revision; how many were closed."""
    now = utcnow()
    closed = 0
    for row in open_steps(session):
        if row.skill == name:
            row.closed_at = now
            row.outcome = "superseded" if row.step == PROPOSED else "revised"
            session.add(row)
            closed += 1
    blocks = session.exec(
        select(SkillBlock).where(SkillBlock.skill == name, col(SkillBlock.cleared_at).is_(None))
    ).all()
    for block in blocks:
        block.cleared_at = now
        session.add(block)
    audit.append(
        session,
        actor="guard",
        action="skill.revised",
        subject=f"skill:{name}",
        data={"revision": revision, "closed_steps": closed, "cleared_breakers": len(blocks)},
    )
    return closed + len(blocks)
