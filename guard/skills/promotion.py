"""A proposed promotion, put to review in git and settled there (``guard.skills.ladder``
records the proposal with the verdict that earned it; this sends it and reads the answer).

At each sync (``skills.sync_every`` and ``guard skills sync``), for each open proposal:

- not sent yet: the skill's folder with ``trust: trusted`` is committed on top of
  ``git_branch`` to ``guard/promote/<name>`` and pushed (``review: pr`` also opens a pull
  request), the commit message naming the verified recoveries. A skill whose file already says
  ``trusted`` (a demoted one) gets a commit with no change to its files: merging it is the
  reviewer's word that lifts the demotion.
- merged (its commit on ``git_branch``, or the skill's file there says ``trusted``): it takes
  effect: the proposal closes, a demotion is lifted, ``skill.promoted`` is audited;
- its branch deleted on the remote unmerged: the proposal is dropped (audited); the outcomes
  go on counting, and a later run can earn a new one.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from guard.domain.exceptions import SkillsRemoteError
from guard.domain.records import utcnow
from guard.skills.sync import SkillsRemote, SyncResult
from guard.store import audit
from guard.store.db import Database
from guard.store.ladder import DEMOTED, PROPOSED, LadderStep, open_step, open_steps

PREFIX = "guard/promote/"
_TRUST = re.compile(r"^trust:.*$", re.M)


def settle(remote: SkillsRemote, db: Database, builtin: Path | None = None) -> SyncResult:
    """Send each unsent proposal; close each one merged or dropped on the remote."""
    result = SyncResult()
    with db.session() as session:
        proposals = [s for s in open_steps(session) if s.step == PROPOSED]
    for step in proposals:
        try:
            if not step.details.get("commit"):
                _send(remote, db, step, builtin, result)
            elif _merged(remote, step):
                _close(db, step, "merged", result)
            elif not remote.git.rev(f"refs/remotes/origin/{step.details['branch']}"):
                _close(db, step, "dropped", result)
        except SkillsRemoteError as exc:
            result.errors.append(f"promotion of {step.skill}: {exc}")
    return result


def _send(
    remote: SkillsRemote, db: Database, step: LadderStep, builtin: Path | None, result: SyncResult
) -> None:
    branch = PREFIX + step.skill
    source = next(
        (
            d / step.skill
            for d in (remote.root, builtin)
            if d is not None and (d / step.skill / "skill.yaml").is_file()
        ),
        None,
    )
    if source is None:
        raise SkillsRemoteError(f"skill {step.skill} is not in {remote.root}")
    text = (source / "skill.yaml").read_text()
    was = trust_of(text)
    commit = remote.git.rev(f"refs/heads/{branch}")  # committed before a crash: reuse it
    if commit is None:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / step.skill
            shutil.copytree(source, folder)
            (folder / "skill.yaml").write_text(with_trusted(text))
            commit = remote.git.commit_beside(folder, f"refs/heads/{branch}", _message(step))
    remote.git.run("push", "--porcelain", "origin", f"refs/heads/{branch}:refs/heads/{branch}")
    link = branch
    if remote.mode == "pr":
        title = _message(step).split("\n")[0]
        link = remote.forge.open(branch, remote.branch, title, step.reason).url
    with db.session() as session:
        row = session.get(LadderStep, step.id)
        assert row is not None
        row.details = {"branch": branch, "commit": commit, "trust_was": was, "link": link}
        session.add(row)
        audit.append(
            session,
            actor="guard",
            action="skill.promotion_sent",
            subject=f"skill:{step.skill}",
            data=row.details,
        )
    result.changed = True
    result.notes.append(f"skill {step.skill} proposed for trust: trusted, for review: {link}")


def _message(step: LadderStep) -> str:
    return (
        f"guard: promote skill {step.skill} to trust: trusted\n\n{step.reason}\n\n"
        "Merge this and Guard runs the skill unasked (a demotion is lifted); delete the "
        "branch to keep asking.\n"
    )


def _merged(remote: SkillsRemote, step: LadderStep) -> bool:
    if remote.git.ok("merge-base", "--is-ancestor", step.details["commit"], "HEAD"):
        return True
    if step.details.get("trust_was") == "trusted":
        return False  # only the commit itself can say so
    shown = remote.git.run("show", f"HEAD:{step.skill}/skill.yaml", check=False)
    return shown.returncode == 0 and trust_of(shown.stdout) == "trusted"


def trust_of(text: str) -> str:
    """The ``trust:`` a skill.yaml's text gives (empty: none, so the default)."""
    found = _TRUST.search(text)
    return found.group(0).partition(":")[2].strip().strip("'\"") if found else ""


def with_trusted(text: str) -> str:
    """A skill.yaml's text saying ``trust: trusted`` (its ``trust:`` line replaced, or added)."""
    return _TRUST.sub("trust: trusted", text) if trust_of(text) else text + "\ntrust: trusted\n"


def _close(db: Database, step: LadderStep, outcome: str, result: SyncResult) -> None:
    with db.session() as session:
        rows = [session.get(LadderStep, step.id)]
        if outcome == "merged":
            rows.append(open_step(session, step.skill, DEMOTED))
        for row in rows:
            if row is not None:
                row.closed_at = utcnow()
                row.outcome = outcome if row.step == PROPOSED else "lifted"
                session.add(row)
        action = "skill.promoted" if outcome == "merged" else "skill.promotion_dropped"
        audit.append(
            session, actor="guard", action=action, subject=f"skill:{step.skill}", data=step.details
        )
    result.changed = True
    said = {
        "merged": f"was merged: skill {step.skill} runs unasked from now on",
        "dropped": "was dropped (its branch was deleted unmerged)",
    }[outcome]
    result.notes.append(f"the promotion of {step.skill} {said}")
