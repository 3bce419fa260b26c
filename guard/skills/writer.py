"""Write a learned skill (SKILL.md, skill.yaml, scripts/) and commit it to the skills git repo.

The trigger is the fault, not one wording of it: the incident's source, kind and target, and for
a log rule's incident the rule (its pattern), so every line that rule matches triggers it
(``message_regex`` still makes one message a trigger regex, for skills written by hand). A shell
fix is saved as the script that ran (``fix_script``: the fix as typed, the target made
``$GUARD_TARGET`` only where it stands as a whole word outside single quotes); an action's
arguments keep their literal ``{{ }}``. A skill identical to one already known is not written
twice; a lesson for a fault a skill covers is its next revision (``guard.skills.revisions``).
The commit names the incident and the approver, so ``git log -p skills/`` is the review trail
and ``git revert`` undoes a bad lesson.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from guard.domain.fingerprint import mask
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.redact import redact, redact_value
from guard.skills.files import NO_SYMLINKS
from guard.skills.gitrepo import LOCK, Git
from guard.skills.lesson import fix_script, generalise, slug, valid_name
from guard.skills.library import Skill, SkillLibrary, load_skill
from guard.skills.model import SkillSpec
from guard.skills.review import BRANCH_PREFIX, Review, ReviewBook, review_dir
from guard.skills.revisions import (
    DIFF_AFTER,
    Draft,
    revised_spec,
    script_diff,
    steps_diff,
    to_revise,
)
from guard.skills.revisions import LearnedSkill as LearnedSkill
from guard.skills.revreview import propose, waiting


class _Redacted:
    """An incident whose text fields read redacted."""

    def __init__(self, incident: Any) -> None:
        self._incident = incident

    def __getattr__(self, name: str) -> Any:
        return redact_value(getattr(self._incident, name))


class SkillWriter:
    def __init__(
        self,
        library: SkillLibrary,
        *,
        trust: str,
        git_commit: bool,
        git_author: str,
        verify_timeout: float,
        review: bool = False,
        taken: Callable[[], set[str]] | None = None,
    ) -> None:
        """``review``: commit each skill to its own branch ``guard/learned/<name>`` and keep it
        in ``.review/`` until it appears on the branch Guard runs from. ``taken``: more names
        not to use (branches that exist locally or on the remote)."""
        self.library = library
        self.trust = trust
        self.git_commit = git_commit
        self.git_author = git_author
        self.verify_timeout = verify_timeout
        self.review = review
        self.taken = taken

    def spec_for(
        self,
        incident: Any,
        fix: str,
        *,
        action: str | None,
        args: dict[str, Any],
        approver: str,
        verdict: str,
        proposed_by: str | None = None,
        approval_only: bool = False,
    ) -> dict[str, Any]:
        trigger = {"source": incident.source, "kind": incident.kind, "target": incident.target}
        rule = (getattr(incident, "details", None) or {}).get("rule")
        if rule:  # a log rule's fault: every line the rule matches, not this one wording
            trigger["rule"] = rule
        if action is not None:
            step: dict[str, Any] = {
                "action": action,
                "args": {k: generalise(v, incident.target) for k, v in args.items()},
            }
        else:
            step = {"run": "scripts/fix.sh"}
        return {
            "triggers": [trigger],
            "steps": [step, {"verify": {"timeout": f"{self.verify_timeout:g}s"}}],
            "limits": {"max_runs": 3, "window": "1h"},
            "trust": "approval" if approval_only else self.trust,  # docker.exec: ask first
            "origin": "learned",
            "learned_from": {
                "incident": incident.id,
                "approver": approver,
                "fix": fix,
                "verified": verdict,
                "at": utcnow().isoformat(),  # microseconds: a run of the same second told apart
                **({"proposed_by": proposed_by} if proposed_by else {}),
            },
        }

    def write(
        self,
        incident: Any,
        fix: str,
        *,
        action: str | None,
        args: dict[str, Any],
        approver: str,
        verdict: str,
        script: str | None = None,
        proposed_by: str | None = None,
        approval_only: bool = False,
        revises: Sequence[str] = (),
    ) -> LearnedSkill:
        """Save the verified fix as a skill, or as the next revision of the skill it revises
        (``guard.skills.revisions``: one of ``revises``, or one with the same triggers). A shell
        fix is saved as ``script``, the script that ran (default: ``fix_script`` of it).
        Everything is validated, and the name chosen, before anything is written; the folder
        appears whole (renamed from a staging folder that ``load_skills`` does not look at) or
        not at all. Every text in it is redacted first (skills go to git)."""
        incident = _Redacted(incident)
        fix, args = redact(fix), redact_value(args)
        script = redact(script) if script is not None else None
        spec = self.spec_for(
            incident,
            fix,
            action=action,
            args=args,
            approver=approver,
            verdict=verdict,
            proposed_by=proposed_by,
            approval_only=approval_only,
        )
        parsed = SkillSpec.model_validate(spec)
        if action is None and script is None:
            script = fix_script(fix, incident.target, incident_id=incident.id, approver=approver)
        for skill in self.library.skills:  # the same lesson again: keep the one we have
            if (
                skill.spec.triggers == parsed.triggers
                and skill.spec.steps == parsed.steps
                and self._same_script(skill.path, script)
            ):
                # written but not committed when Guard stopped: finish the commit now
                commit = (
                    self._commit_leftover(skill.path, incident, fix, approver, verdict)
                    if skill.spec.origin == "learned"
                    else None
                )
                return LearnedSkill(skill.name, skill.path, commit, existed=commit is None)
        revised = to_revise(self.library, parsed, revises)
        if revised is not None:
            if revised.spec.steps == parsed.steps and self._same_script(revised.path, script):
                return LearnedSkill(revised.name, revised.path, None, existed=True)  # no change
            if self.review and (kept := waiting(self.library.folder, revised)) is not None:
                return kept  # one revision under review at a time
            draft = self._draft(revised, spec, incident, fix, approver, verdict, script)
            # under review: to its own branch; the old revision runs until it is merged
            return (
                propose(self.library, self.git_author, draft)
                if self.review
                else self._revise(draft)
            )
        name = self._free_name(incident.kind, incident.target)
        md = self._skill_md(name, incident, fix, approver, verdict)
        staging = self._stage(name, spec, md, script)
        try:
            parent = review_dir(self.library.folder) if self.review else self.library.folder
            parent.mkdir(parents=True, exist_ok=True)
            folder = parent / name
            staging.rename(folder)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
        if self.review:
            try:
                sha = self._commit_for_review(folder, name, incident, fix, approver, verdict)
            except Exception:
                shutil.rmtree(folder, ignore_errors=True)  # not committed: not learned
                raise
            self.library.reload()
            return LearnedSkill(name, folder, sha, branch=BRANCH_PREFIX + name)
        self.library.reload()
        reached("learning.files_written")
        commit = self._commit(folder, name, incident, fix, approver, verdict)
        return LearnedSkill(name, folder, commit)

    def _stage(self, name: str, spec: dict[str, Any], md: str, script: str | None) -> Path:
        """The skill's folder, written and validated in ``.incoming/`` (the caller moves it)."""
        staging = self.library.folder / ".incoming" / name
        if staging.exists():
            shutil.rmtree(staging)
        (staging / "scripts").mkdir(parents=True)
        try:
            if script is not None:
                path = staging / "scripts" / "fix.sh"
                path.write_text(script)
                path.chmod(0o755)
            else:
                (staging / "scripts" / ".keep").write_text("")
            (staging / "skill.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
            (staging / "SKILL.md").write_text(md)
            load_skill(staging)  # raises ConfigError naming the problem; nothing is published
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return staging

    def _draft(
        self,
        skill: Skill,
        lesson: dict[str, Any],
        incident: Any,
        fix: str,
        approver: str,
        verdict: str,
        script: str | None,
    ) -> Draft:
        """``lesson`` as ``skill``'s next revision, staged, with its diff and commit message."""
        spec = revised_spec(skill, lesson)
        n = int(spec["revision"])
        md = self._skill_md(skill.name, incident, fix, approver, verdict, revision=n)
        staging = self._stage(skill.name, spec, md, script)
        try:
            diff = "\n".join(
                d for d in (steps_diff(skill.path, spec, n), script_diff(skill.path, staging)) if d
            )
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        message = self._message(skill.name, incident, fix, approver, verdict, revision=n)
        message += f"Revises: revision {n - 1} {DIFF_AFTER}{diff}\n"
        return Draft(skill, n, staging, diff, message, incident, fix, approver, verdict)

    def _revise(self, draft: Draft) -> LearnedSkill:
        """Write the revision in its skill's folder, committed with the diff."""
        skill = draft.skill
        was = draft.staging.with_name(f"{skill.name}.was")
        try:
            shutil.rmtree(was, ignore_errors=True)
            skill.path.rename(was)
            draft.staging.rename(skill.path)
        finally:
            for leftover in (draft.staging, was):
                shutil.rmtree(leftover, ignore_errors=True)
        self.library.reload()
        reached("learning.files_written")
        d = draft
        commit = self._commit(
            skill.path, skill.name, d.incident, d.fix, d.approver, d.verdict, d.message
        )
        return LearnedSkill(skill.name, skill.path, commit, revision=d.revision, diff=d.diff)

    def _commit_for_review(
        self, folder: Path, name: str, incident: Any, fix: str, approver: str, verdict: str
    ) -> str:
        """Commit the skill, on top of the branch Guard runs from, to ``guard/learned/NAME``
        (the working tree stays as it is) and note it as pending review."""
        git = Git(self.library.folder, author=self.git_author)
        branch = BRANCH_PREFIX + name
        commit = git.commit_beside(
            folder, f"refs/heads/{branch}", self._message(name, incident, fix, approver, verdict)
        )
        ReviewBook(self.library.folder).put(
            name, Review.pending(branch, commit, incident, fix, approver, verdict)
        )
        return commit

    @staticmethod
    def _message(
        name: str, incident: Any, fix: str, approver: str, verdict: str, revision: int = 1
    ) -> str:
        head = (
            f"learn skill {name}" if revision == 1 else f"revise skill {name} (revision {revision})"
        )
        return (
            f"guard: {head} from incident #{incident.id}\n\n"
            f"Incident: #{incident.id} {incident.title}\nApproved-by: {approver}\n"
            f"Fix: {fix}\nVerified: {verdict}\n"
        )

    @staticmethod
    def _same_script(path: Path, script: str | None) -> bool:
        if script is None:
            return True
        saved = path / "scripts" / "fix.sh"
        return (
            saved.is_file() and saved.read_text().split("\n", 2)[2:] == script.split("\n", 2)[2:]
        )  # the same commands (the header names the incident)

    def _free_name(self, kind: str, target: str) -> str:
        """A valid name no skill folder (loaded, quarantined or on disk) has yet."""
        base = valid_name(f"learned-{slug(kind, 24)}-{slug(target, 30)}")
        taken = (
            {s.name for s in self.library.skills}
            | set(self.library.quarantined)
            | {
                p.name
                for d in (self.library.folder, review_dir(self.library.folder))
                if d.is_dir()
                for p in d.iterdir()
            }
            | (self.taken() if self.taken is not None else set())
        )
        name, n = base, 2
        while name in taken:
            name, n = valid_name(base, str(n)), n + 1
        return name

    @staticmethod
    def _skill_md(
        name: str, incident: Any, fix: str, approver: str, verdict: str, revision: int = 1
    ) -> str:
        description = (
            f"Heals {incident.kind.replace('_', ' ')} on {incident.target} by "
            f"running `{fix}`. Use when Guard opens a {incident.source} incident of "
            f"kind {incident.kind} for {incident.target}. Learned from incident "
            f"#{incident.id}, approved by {approver}."
        )[:1024]
        front = {
            "name": name,
            "description": description,
            "license": "Apache-2.0",
            "metadata": {
                "origin": "learned",
                "incident": str(incident.id),
                "approver": approver,
                "guard-kind": incident.kind,
                "revision": str(revision),
            },
        }
        return (
            "---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n\n"
            f"# {name}\n\n"
            "## When to use\n\n"
            f"A `{incident.kind}` incident from the `{incident.source}` monitor on "
            f"`{incident.target}`, with a message like:\n\n    {mask(incident.message)[:300]}\n\n"
            "## Procedure\n\n"
            f"1. Run the fix: `{fix}` (see `skill.yaml`; shell fixes are in `scripts/fix.sh` and "
            "run in Guard's sandbox, actions are performed by Guard).\n"
            "2. Re-run the check that opened the incident until it passes.\n\n"
            "## Pitfalls\n\n"
            "- Learned from one incident: if the fault keeps coming back, the fix treats a "
            "symptom. Guard stops after 2 failed runs in a row and asks a human.\n"
            "- Review it with `git log -p` and revert it with `git revert` if it is wrong.\n\n"
            "## Verification\n\n"
            f"The original check passes again. When it was learned: {verdict}.\n"
        )

    def _commit_leftover(
        self, folder: Path, incident: Any, fix: str, approver: str, verdict: str
    ) -> str | None:
        """Commit a learned skill's folder that is in the tree but not in git (a crash came
        between writing it and committing it); None when there is nothing to commit."""
        if not self.git_commit or self.review or folder.parent != self.library.folder:
            return None
        try:
            root = self._repo(folder.parent)
            dirty = self._git(root, "status", "--porcelain", "--", str(folder)).strip()
        except Exception:
            return None
        if not dirty:
            return None
        return self._commit(folder, folder.name, incident, fix, approver, verdict)

    def _commit(
        self,
        folder: Path,
        name: str,
        incident: Any,
        fix: str,
        approver: str,
        verdict: str,
        message: str | None = None,
    ) -> str | None:
        if not self.git_commit:
            return None
        root = self._repo(folder.parent)
        author = self.git_author
        msg = message or self._message(name, incident, fix, approver, verdict)
        env_ident = [
            "-c",
            f"user.name={author.split('<')[0].strip() or 'Guard'}",
            "-c",
            f"user.email={author.split('<')[-1].rstrip('>') or 'guard@localhost'}",
        ]
        with LOCK:  # not while a sync fast-forwards the working tree
            self._git(root, "add", "--", str(folder))
            self._git(root, *env_ident, "commit", "-q", "-m", msg, "--", str(folder))
            return self._git(root, "rev-parse", "HEAD").strip()

    def _repo(self, folder: Path) -> Path:
        try:
            return Path(self._git(folder, "rev-parse", "--show-toplevel").strip())
        except RuntimeError:
            self._git(folder, "init", "-q")
            return folder

    @staticmethod
    def _git(cwd: Path, *args: str) -> str:
        proc = subprocess.run(
            ["git", *NO_SYMLINKS, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()}")
        return proc.stdout
