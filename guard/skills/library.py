"""Load, validate and match skills.

``load_skills`` reads every ``skills/<name>/`` folder and collects every problem (file, field,
reason) before raising, like playbooks. A folder that is a symlink, or holds one (on disk or in
git's index), or files over the size limits, is quarantined before any of it is read
(``guard.skills.files``). ``SkillLibrary.candidates`` ranks the skills whose
triggers match an incident, best first, each with the reasons it matched.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from loguru import logger
from pydantic import ValidationError

from guard.domain.exceptions import ConfigError
from guard.memory.embedders import terms
from guard.skills.files import MAX_FILE_BYTES, folder_problems, index_problems
from guard.skills.model import REQUIRED_SECTIONS, SkillFrontmatter, SkillSpec
from guard.skills.review import Review, ReviewBook, review_dir
from guard.util.validation import display_path, format_validation_error, line_finder

_FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)(.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class Skill:
    """A loaded skill: its folder, frontmatter, body and spec; ``review`` when it was learned
    under review (``pending``: not on ``git_branch`` yet, so never run unasked)."""

    path: Path
    meta: SkillFrontmatter
    body: str
    spec: SkillSpec
    review: Review | None = None
    pending: bool = False

    @property
    def runs_unasked(self) -> bool:
        """Trusted, and not under review."""
        return self.spec.trust == "trusted" and not self.pending

    def offer_text(self) -> str:
        """What a human is shown when this skill is offered (under review: that first)."""
        if self.pending and self.review is not None:
            return f"{self.review.offer()}. {self.description}"
        if self.review is not None and self.review.status == "pending":  # its next revision
            return f"{self.description} ({self.review.offer()})"
        return self.description

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def description(self) -> str:
        return self.meta.description

    def script(self, name: str) -> Path | None:
        """``scripts/NAME`` inside the skill, if ``name`` refers to one: a regular file within
        the size limit, reached through no symlink (checked again here: the folder may have
        changed since it was loaded)."""
        candidate = (self.path / name).resolve()
        scripts = (self.path / "scripts").resolve()
        if self.path.is_symlink() or scripts not in candidate.parents:
            return None
        path = self.path
        for part in Path(name).parts:
            path = path / part
            if not path.exists() or stat.S_ISLNK(os.lstat(path).st_mode):
                return None
        mode = os.lstat(path)
        if not stat.S_ISREG(mode.st_mode) or mode.st_size > MAX_FILE_BYTES:
            return None
        return candidate


@dataclass(frozen=True)
class Candidate:
    skill: Skill
    score: float
    reasons: list[str] = field(default_factory=list)


def parse_skill_md(text: str, label: str) -> tuple[dict[str, Any], str]:
    """Split SKILL.md into its frontmatter mapping and Markdown body."""
    m = _FRONTMATTER.match(text)
    if not m:
        raise ConfigError(
            [f"{label}: SKILL.md must start with YAML frontmatter between '---' lines"]
        )
    try:
        data = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ConfigError([f"{label}: invalid frontmatter YAML: {exc}"]) from None
    if not isinstance(data, dict):
        raise ConfigError([f"{label}: frontmatter must be a mapping"])
    return data, m.group(2)


def missing_sections(body: str) -> list[str]:
    headings = {h.strip().lower() for h in re.findall(r"^#{1,6}\s+(.+?)\s*$", body, re.M)}
    return [s for s in REQUIRED_SECTIONS if s.lower() not in headings]


def load_skill(folder: Path) -> Skill:
    """Validate and load one skill folder (its files first: nothing is read through a link)."""
    problems = folder_problems(folder, display_path(folder))
    if problems:
        raise ConfigError(problems)
    md, spec_file = folder / "SKILL.md", folder / "skill.yaml"
    md_label, spec_label = display_path(md), display_path(spec_file)
    meta: SkillFrontmatter | None = None
    body = ""
    if not md.is_file():
        problems.append(f"{md_label}: missing (every skill needs a SKILL.md)")
    else:
        try:
            data, body = parse_skill_md(md.read_text(encoding="utf-8"), md_label)
            problems += [
                f"{md_label}: missing section '## {section}'" for section in missing_sections(body)
            ]
            meta = SkillFrontmatter.model_validate(data)
            if meta.name != folder.name:
                problems.append(
                    f"{md_label}: name: {meta.name!r} must equal the folder name {folder.name!r}"
                )
        except ConfigError as exc:
            problems += exc.problems
        except ValidationError as exc:
            problems += format_validation_error(md_label, exc)
    spec: SkillSpec | None = None
    if not spec_file.is_file():
        problems.append(f"{spec_label}: missing (every skill needs a skill.yaml)")
    else:
        text = spec_file.read_text(encoding="utf-8")
        try:
            spec = SkillSpec.model_validate(yaml.safe_load(text) or {})
        except yaml.YAMLError as exc:
            problems.append(f"{spec_label}: invalid YAML: {exc}")
        except ValidationError as exc:
            problems += format_validation_error(spec_label, exc, line_of=line_finder(text))
    if spec is not None:
        for i, step in enumerate([*spec.diagnostics, *spec.steps]):
            if step.run and step.run.startswith("scripts/") and not (folder / step.run).is_file():
                problems.append(f"{spec_label}: steps[{i}].run: script {step.run!r} not found")
    if problems:
        raise ConfigError(problems)
    assert meta is not None and spec is not None
    return Skill(folder, meta, body, spec)


def load_skills_quarantining(folder: Path) -> tuple[list[Skill], dict[str, list[str]]]:
    """Every skill under ``folder`` that loads, and the problems of each one that does not
    (by folder name): a bad skill is quarantined, never a reason for Guard not to start."""
    if not folder.is_dir():
        return [], {}
    skills, quarantined = [], index_problems(folder, display_path(folder))
    for sub in sorted(
        p for p in folder.iterdir() if (p.is_dir() or p.is_symlink()) and not p.name.startswith(".")
    ):
        if sub.name in quarantined:
            continue  # git says it holds a link: not even looked at
        try:
            skills.append(load_skill(sub))
        except ConfigError as exc:
            quarantined[sub.name] = exc.problems
    return skills, quarantined


def load_library(
    folder: Path, builtin: Path | None = None
) -> tuple[list[Skill], dict[str, list[str]]]:
    """The skills on ``git_branch`` (``folder``) plus those under review (``folder/.review``),
    each with its review entry, then the starter skills of ``builtin`` that ``folder`` does not
    override (same name); and the quarantined ones."""
    skills, quarantined = load_skills_quarantining(folder)
    book = ReviewBook(folder).load()
    skills = [replace(s, review=book[s.name]) if s.name in book else s for s in skills]
    names = {s.name for s in skills}
    waiting, _ = load_skills_quarantining(review_dir(folder))
    for skill in waiting:
        entry = book.get(skill.name)
        if skill.name not in names and entry is not None and entry.status == "pending":
            skills.append(replace(skill, review=entry, pending=True))
    if builtin is not None and builtin.resolve() != folder.resolve():
        shipped, broken = load_skills_quarantining(builtin)
        mine = {s.name for s in skills} | set(quarantined)
        skills += [s for s in shipped if s.name not in mine]
        quarantined |= {name: p for name, p in broken.items() if name not in mine}
    return skills, quarantined


def rank_key(c: Candidate) -> tuple[bool, float, str]:
    """The one order of candidate skills: a skill under review first (a human is asked about
    it; it never runs unasked), then by score, then by name (stable)."""
    return (not c.skill.pending, -c.score, c.skill.name)


def load_skills(folder: Path) -> list[Skill]:
    """Every skill under ``folder`` (missing folder: none); raise with all problems found."""
    skills, quarantined = load_skills_quarantining(folder)
    if quarantined:
        raise ConfigError([p for problems in quarantined.values() for p in problems])
    return skills


def text_overlap(description: str, message: str) -> float:
    """Full-text tie-breaker: the share of the message's terms found in the description."""
    msg = set(terms(message))
    if not msg:
        return 0.0
    return round(len(msg & set(terms(description))) / len(msg), 2)


class SkillLibrary:
    """The skills Guard knows, reloadable when a new one is learned. A skill that does not load
    is left out and listed in ``quarantined`` (folder name -> problems)."""

    def __init__(self, folder: Path, builtin: Path | None = None) -> None:
        self.folder = folder
        self.builtin = builtin  # the starter skills, beneath ``folder`` (``load_library``)
        self.skills: list[Skill] = []
        self.quarantined: dict[str, list[str]] = {}
        self._signature: tuple[Any, ...] = ()
        self.reload()

    def signature(self) -> tuple[Any, ...]:
        """Changes when a skill folder, one of its files, or the review book changes."""
        seen: list[Any] = [ReviewBook(self.folder).signature()]
        index = self.folder / ".git" / "index"  # a checkout may bring links as plain files
        if index.is_file():
            seen.append(index.stat().st_mtime_ns)
        for base in (self.folder, review_dir(self.folder)):
            if not base.is_dir():
                continue
            for sub in sorted(base.iterdir()):
                if sub.is_symlink():
                    seen.append((str(sub), os.readlink(sub)))
                elif sub.is_dir() and not sub.name.startswith("."):
                    seen += [
                        (str(f), f.stat().st_mtime_ns)
                        for f in sorted(sub.rglob("*"))
                        if f.is_file()
                    ]
        return tuple(seen)

    def refresh(self) -> bool:
        """Reload when anything changed on disk (a sync, or a learned skill); True if so."""
        if self.signature() == self._signature:
            return False
        self.reload()
        return True

    def reload(self) -> None:
        self._signature = self.signature()
        self.skills, self.quarantined = load_library(self.folder, self.builtin)
        for name, problems in self.quarantined.items():
            logger.error(
                "skill {} is quarantined (not used until fixed): {}", name, "; ".join(problems)
            )

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def candidates(self, incident: Any) -> list[Candidate]:
        """Skills whose triggers match ``incident``, best first (disabled ones excluded)."""
        found = []
        for skill in self.skills:
            if skill.spec.trust == "disabled":
                continue
            best: tuple[int, list[str]] | None = None
            for trigger in skill.spec.triggers:
                hit = trigger.match(incident)
                if hit is not None and (best is None or hit[0] > best[0]):
                    best = hit
            if best is not None:
                reasons = ["trigger: " + ", ".join(best[1])]
                score = float(best[0])
                if skill.spec.origin == "learned":  # proven on this system
                    score += 0.5
                    reasons.append("learned here from a verified fix")
                if skill.pending and skill.review is not None:
                    reasons.append(skill.review.offer())
                overlap = text_overlap(skill.description, incident.message)
                if overlap:
                    score += overlap
                    reasons.append(f"description shares {overlap:.2f} of its terms")
                found.append(Candidate(skill, round(score, 3), reasons))
        return sorted(found, key=rank_key)
