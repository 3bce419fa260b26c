"""Write a learned skill (SKILL.md, skill.yaml, scripts/) and commit it to the skills git repo.

The trigger is generalised from the incident: its source, kind and target, and its message with
the varying parts masked and turned into a regex. A skill identical to one already known is not
written twice. The commit names the incident and the approver, so ``git log -p skills/`` is the
review trail and ``git revert`` undoes a bad lesson.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from guard.fingerprint import mask
from guard.records import utcnow
from guard.redact import redact, redact_value
from guard.skills.library import SkillLibrary
from guard.skills.model import SkillSpec

_PLACEHOLDER = re.compile(r"<(?:ts|uuid|ip|hex|id|num)>")


@dataclass(frozen=True)
class LearnedSkill:
    name: str
    path: Path
    commit: str | None  # None when git is off or the skill already existed
    existed: bool = False


def slug(text: str, limit: int = 40) -> str:
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return re.sub(r"-{2,}", "-", out)[:limit].strip("-") or "x"


def message_regex(message: str) -> str:
    """A regex matching ``message`` and its repeats with other timestamps, ids and numbers."""
    masked = mask(message)[:300]
    parts = _PLACEHOLDER.split(masked)
    return ".+?".join(re.escape(p) for p in parts)


def generalise(value: Any, target: str) -> Any:
    if isinstance(value, str) and target:
        return value.replace(target, "{{ incident.target }}")
    return value


class _Redacted:
    """An incident whose text fields read redacted."""

    def __init__(self, incident: Any) -> None:
        self._incident = incident

    def __getattr__(self, name: str) -> Any:
        return redact_value(getattr(self._incident, name))


class SkillWriter:
    def __init__(self, library: SkillLibrary, *, trust: str, git_commit: bool,
                 git_author: str, verify_timeout: float) -> None:
        self.library = library
        self.trust = trust
        self.git_commit = git_commit
        self.git_author = git_author
        self.verify_timeout = verify_timeout

    def spec_for(self, incident: Any, fix: str, *, action: str | None,
                 args: dict[str, Any], approver: str, verdict: str) -> dict[str, Any]:
        trigger = {"source": incident.source, "kind": incident.kind, "target": incident.target,
                   "message": message_regex(incident.message)}
        if action is not None:
            step: dict[str, Any] = {"action": action,
                                    "args": {k: generalise(v, incident.target)
                                             for k, v in args.items()}}
        else:
            step = {"run": "scripts/fix.sh"}
        return {
            "triggers": [trigger],
            "steps": [step, {"verify": {"timeout": f"{self.verify_timeout:g}s"}}],
            "limits": {"max_runs": 3, "window": "1h"},
            "trust": self.trust,
            "origin": "learned",
            "learned_from": {"incident": incident.id, "approver": approver, "fix": fix,
                             "verified": verdict, "at": utcnow().isoformat(timespec="seconds")},
        }

    def write(self, incident: Any, fix: str, *, action: str | None, args: dict[str, Any],
              approver: str, verdict: str) -> LearnedSkill:
        """Write and commit the skill; every text in it is redacted first (skills go to git)."""
        incident = _Redacted(incident)
        fix, args = redact(fix), redact_value(args)
        spec = self.spec_for(incident, fix, action=action, args=args, approver=approver,
                             verdict=verdict)
        parsed = SkillSpec.model_validate(spec)
        for skill in self.library.skills:  # the same lesson again: keep the one we have
            if (skill.spec.triggers == parsed.triggers and skill.spec.steps == parsed.steps
                    and self._same_script(skill.path, fix, action)):
                return LearnedSkill(skill.name, skill.path, None, existed=True)
        name = self._free_name(f"learned-{slug(incident.kind, 24)}-{slug(incident.target, 30)}")
        folder = self.library.folder / name
        (folder / "scripts").mkdir(parents=True)
        if action is None:
            script = folder / "scripts" / "fix.sh"
            body = generalise(fix, incident.target).replace("{{ incident.target }}",
                                                            '"$GUARD_TARGET"')
            script.write_text(f"#!/bin/sh\n# Learned from incident #{incident.id}, approved by "
                              f"{approver}.\nset -eu\n{body}\n")
            script.chmod(0o755)
        else:
            (folder / "scripts" / ".keep").write_text("")
        (folder / "skill.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        (folder / "SKILL.md").write_text(self._skill_md(name, incident, fix, approver, verdict))
        self.library.reload()
        commit = self._commit(folder, name, incident, fix, approver, verdict)
        return LearnedSkill(name, folder, commit)

    @staticmethod
    def _same_script(path: Path, fix: str, action: str | None) -> bool:
        if action is not None:
            return True
        script = path / "scripts" / "fix.sh"
        return script.is_file() and fix.split("{{")[0] in script.read_text()

    def _free_name(self, base: str) -> str:
        base = base[:60].strip("-")
        name, n = base, 2
        while (self.library.folder / name).exists():
            name, n = f"{base[:57]}-{n}", n + 1
        return name

    @staticmethod
    def _skill_md(name: str, incident: Any, fix: str, approver: str, verdict: str) -> str:
        description = (f"Heals {incident.kind.replace('_', ' ')} on {incident.target} by "
                       f"running `{fix}`. Use when Guard opens a {incident.source} incident of "
                       f"kind {incident.kind} for {incident.target}. Learned from incident "
                       f"#{incident.id}, approved by {approver}.")[:1024]
        front = {"name": name, "description": description, "license": "Apache-2.0",
                 "metadata": {"origin": "learned", "incident": str(incident.id),
                              "approver": approver, "guard-kind": incident.kind}}
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

    def _commit(self, folder: Path, name: str, incident: Any, fix: str, approver: str,
                verdict: str) -> str | None:
        if not self.git_commit:
            return None
        root = self._repo(folder.parent)
        author = self.git_author
        msg = (f"guard: learn skill {name} from incident #{incident.id}\n\n"
               f"Incident: #{incident.id} {incident.title}\nApproved-by: {approver}\n"
               f"Fix: {fix}\nVerified: {verdict}\n")
        env_ident = ["-c", f"user.name={author.split('<')[0].strip() or 'Guard'}",
                     "-c", f"user.email={author.split('<')[-1].rstrip('>') or 'guard@localhost'}"]
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
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=60, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()}")
        return proc.stdout
