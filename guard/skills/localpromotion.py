"""Promotion where there is no git remote: the proposal (``guard.skills.ladder``) is a question
to an admin, and the answer is committed to the local skills repository.

- Asked: ``guard.notify.promotionask`` puts the question (the recoveries that earned it, the
  diff ``-trust: approval`` / ``+trust: trusted``, the buttons *Promote* and *Keep asking*) on
  every chat channel, in the transaction that marks the proposal asked: one question, also
  across a restart.
- Promote (a press needing ``admin``, or ``guard skills promote NAME``): the decision is stored
  with the press, then ``complete`` commits ``trust: trusted`` to the skill's skill.yaml (a
  starter skill is copied into ``skills_dir`` first, where it wins), closes the proposal (and a
  demotion) and audits ``skill.promoted`` with who. A crash between the two: the next
  ``complete`` finishes it (the commit is skipped when the file already says ``trusted``).
- Keep asking: the proposal closes as ``declined`` (audited ``skill.promotion_declined``);
  the ladder counts ``promote_after`` new verified recoveries from then on.

Tested by tests/skills/test_localpromotion.py.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import update
from sqlmodel import Session, col, select

from guard.config import Settings
from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.skills.gitrepo import LOCK, Git
from guard.skills.promotion import trust_of, with_trusted
from guard.store import audit
from guard.store.db import Database
from guard.store.ladder import (
    DECLINED,
    DEMOTED,
    KEEP,
    PROMOTE,
    PROPOSED,
    LadderStep,
    open_step,
    open_steps,
)
from guard.store.models import Approval, RemediationRun, RunOrigin, RunStatus

VERB = "trust"  # what the gate is asked: changing a skill's trust needs admin


@dataclass(frozen=True)
class Recovery:
    """One verified run that earned the proposal."""

    incident_id: int
    target: str
    at: datetime
    seconds: float


def recoveries(session: Session, step: LadderStep, count: int) -> list[Recovery]:
    """The last ``count`` verified runs of the skill up to the proposal, oldest first."""
    runs = session.exec(
        select(RemediationRun)
        .where(
            RemediationRun.skill == step.skill,
            RemediationRun.origin == RunOrigin.skill,
            RemediationRun.status == RunStatus.verified,
            col(RemediationRun.started_at) <= step.at,
        )
        .order_by(col(RemediationRun.id).desc())
        .limit(count)
    ).all()
    return [
        Recovery(
            r.incident_id,
            r.target,
            r.finished_at or r.started_at,
            ((r.finished_at or r.started_at) - r.started_at).total_seconds(),
        )
        for r in reversed(runs)
    ]


def trust_was(settings: Settings, name: str) -> str:
    """The ``trust:`` the skill's file says now ("" when it names none, or is not found)."""
    folder = source_of(settings, name)
    return trust_of((folder / "skill.yaml").read_text()) if folder else ""


def source_of(settings: Settings, name: str) -> Path | None:
    """The skill's folder: in ``skills_dir``, else the starter skills'."""
    for base in (settings.skills_dir, settings.builtin_skills_dir):
        if base is not None and (base / name / "skill.yaml").is_file():
            return base / name
    return None


def proposal_of(session: Session, name: str) -> dict[str, object] | None:
    """The skill's open proposal, for ``guard skills show --json``: why, since when, and where
    it was asked (``asked``: the question is out; ``decision``: answered, being applied)."""
    step = open_step(session, name, PROPOSED)
    if step is None:
        return None
    details = step.details
    return {
        "reason": step.reason,
        "at": step.at.isoformat(),
        "review": "git" if details.get("branch") else "question",
        "asked": bool(details.get("asked")),
        "chats": details.get("chats", []),
        "link": details.get("link"),
        "decision": details.get("decision"),
    }


def decide_in(session: Session, step_id: int, kind: str, actor: str) -> LadderStep:
    """Record an admin's answer to a proposal in the caller's transaction (a press spends its
    approval in the same one). Keep asking closes it at once; promote is finished by
    ``complete`` (it commits to git, outside the transaction)."""
    step = session.get(LadderStep, step_id)
    if step is None or step.closed_at is not None:
        raise GuardError("this promotion was already answered")
    now = utcnow()
    step.details = {**step.details, "decision": {"kind": kind, "by": actor, "at": now.isoformat()}}
    if kind == KEEP:
        step.closed_at, step.outcome = now, DECLINED
        audit.append(
            session,
            actor=actor,
            action="skill.promotion_declined",
            subject=f"skill:{step.skill}",
            data={"by": actor, "reason": step.reason},
        )
    _spend(session, step, actor)
    session.add(step)
    return step


def _spend(session: Session, step: LadderStep, actor: str) -> None:
    """The question's buttons stop working: answered (whichever way, wherever)."""
    ids = list(step.details.get("approvals") or [])
    if ids:
        session.execute(
            update(Approval)
            .where(col(Approval.id).in_(ids), col(Approval.used_at).is_(None))
            .values(used_at=utcnow(), used_by=actor)
        )


def promote_now(db: Database, settings: Settings, name: str, actor: str) -> list[str]:
    """``guard skills promote NAME``: answer its open proposal (or, with none, make one that
    says who asked) with promote, and finish it; a demoted skill's demotion is lifted. Nothing
    (``[]``) for a skill already trusted."""
    if source_of(settings, name) is None:
        raise GuardError(f"no skill named {name!r} (see `guard skills list`)")
    with db.session() as session:
        step = open_step(session, name, PROPOSED)
        demoted = open_step(session, name, DEMOTED)
        if step is None and demoted is None and trust_was(settings, name) == "trusted":
            return []  # nothing to promote
        if step is None:
            step = LadderStep(skill=name, step=PROPOSED, reason=f"promoted by {actor}")
            session.add(step)
            session.flush()
        assert step.id is not None
        decide_in(session, step.id, PROMOTE, actor)
    return complete(db, settings)


_COMPLETING = threading.Lock()


def complete(db: Database, settings: Settings) -> list[str]:
    """Finish every proposal an admin answered with promote; what happened, one line each."""
    with db.session() as session:
        decided = [
            s
            for s in open_steps(session)
            if s.step == PROPOSED and (s.details.get("decision") or {}).get("kind") == PROMOTE
        ]
    notes = []
    for step in decided:
        with _COMPLETING:  # the press and the job race for it: one commits and audits
            note = _complete_one(db, settings, step)
        if note is not None:
            notes.append(note)
    return notes


def _complete_one(db: Database, settings: Settings, step: LadderStep) -> str | None:
    """Commit and close one promoted proposal; None if another caller already closed it."""
    by = str(step.details["decision"]["by"])
    commit = commit_trusted(settings, step.skill, by, step.reason)
    with db.session() as session:
        closed = session.execute(  # another replica's or thread's close wins once
            update(LadderStep)
            .where(col(LadderStep.id) == step.id, col(LadderStep.closed_at).is_(None))
            .values(closed_at=utcnow(), outcome="promoted")
        )
        if getattr(closed, "rowcount", 0) != 1:
            return None  # the other finished it (and audited it)
        demoted = open_step(session, step.skill, DEMOTED)
        if demoted is not None:
            demoted.closed_at, demoted.outcome = utcnow(), "lifted"
            session.add(demoted)
        audit.append(
            session,
            actor=by,
            action="skill.promoted",
            subject=f"skill:{step.skill}",
            data={"by": by, "commit": commit, "reason": step.reason},
        )
    return (
        f"skill {step.skill} was promoted to trust: trusted by {by}"
        + (f" (commit {commit[:10]})" if commit else "")
        + ": it runs unasked from now on"
    )


def commit_trusted(settings: Settings, name: str, by: str, reason: str) -> str | None:
    """Commit ``trust: trusted`` to the skill's skill.yaml in ``skills_dir``'s repository; the
    commit, or None when the file said so already (a demoted skill, or a finished crash)."""
    source = source_of(settings, name)
    if source is None:
        raise GuardError(f"skill {name} is in neither {settings.skills_dir} nor the starter skills")
    root = settings.skills_dir
    folder = root / name
    git = Git(root, author=settings.skills.git_author)
    with LOCK:
        if source != folder:  # a starter skill: its copy in skills_dir wins from now on
            shutil.copytree(source, folder, dirs_exist_ok=True)
        if not git.ok("rev-parse", "--show-toplevel"):
            git.run("init", "-q")
        if not git.out("ls-files", "--", name):  # never committed: as it was, first
            git.run("add", "--", name)
            git.run(
                "commit", "-q", "-m", f"guard: track skill {name} before its promotion", "--", name
            )
        text = (folder / "skill.yaml").read_text()
        if trust_of(text) == "trusted":
            return None
        (folder / "skill.yaml").write_text(with_trusted(text))
        git.run("add", "--", name)
        message = (
            f"guard: promote skill {name} to trust: trusted\n\n{reason}\n\nApproved-by: {by}\n"
        )
        git.run("commit", "-q", "-m", message, "--", name)
        return git.out("rev-parse", "HEAD")
