"""Where each learned skill stands in review: Guard's own notes, beside the skills repository.

With ``skills.review`` ``branch`` or ``pr``, a learned skill is committed to its own branch
``guard/learned/<name>`` and its folder is kept in ``skills_dir/.review/<name>/`` (ignored by
git and by the trusted library). ``skills_dir/.review/book.json`` says, per skill, its branch,
its pull request (``url``), the incident and fix it came from, whether its branch reached the
remote, and its status:

- ``pending``: under review; offered to a human first, never run unasked;
- ``merged``: it appeared on ``git_branch``; the folder there is what runs;
- ``rejected``: its branch was deleted (or its pull request closed) unmerged; it is gone.

A skill in ``skills_dir`` with no entry is ``direct``: it is on ``git_branch`` as it is. An
entry with ``revision`` is a revision of a skill on ``git_branch`` (``guard.skills.revreview``):
its branch is ``guard/revise/<name>/<n>``, and the skill there runs until it is merged.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Status = Literal["pending", "merged", "rejected"]
REVIEW_DIR = ".review"
BRANCH_PREFIX = "guard/learned/"
REVISE_PREFIX = "guard/revise/"  # a revision of a skill on git_branch: guard/revise/NAME/N
_SAID = re.compile(r"^(Incident|Approved-by|Fix|Verified): (.*)$", re.M)


@dataclass(frozen=True)
class Review:
    """A learned skill's place in review."""

    status: Status
    branch: str
    url: str | None = None
    incident: int | None = None
    title: str = ""
    fix: str = ""
    approver: str = ""
    verified: str = ""
    commit: str | None = None
    pushed: bool = False
    pr: int | None = None
    revision: int | None = None  # a revision of the skill on git_branch (that one runs)
    diff: str = ""  # a revision's steps diff
    merged_at: str | None = None  # a revision: when the sync saw it merged (its start)

    @classmethod
    def pending(
        cls,
        branch: str,
        commit: str,
        incident: Any,
        fix: str,
        approver: str,
        verdict: str,
        **more: Any,
    ) -> Review:
        """A skill just committed to ``branch`` for review, learned from ``incident``."""
        return cls(
            status="pending",
            branch=branch,
            incident=int(incident.id),
            title=incident.title,
            fix=fix,
            approver=approver,
            verified=verdict,
            commit=commit,
            **more,
        )

    @property
    def link(self) -> str:
        """The pull request's URL, else the branch (with its web URL when known)."""
        return self.url or self.branch

    def offer(self) -> str:
        """How a human is told about it when it is offered."""
        if self.revision:
            return (
                f"revision {self.revision} under review: {self.link}, from incident "
                f"#{self.incident}: `{self.fix}`"
            )
        return f"learned from incident #{self.incident}, under review: {self.link}"


def noted(branch: str, sha: str, message: str, **more: Any) -> Review:
    """A pending review rebuilt from its commit's message (Guard stopped before noting it)."""
    said = dict(_SAID.findall(message))
    number, _, title = said.get("Incident", "").partition(" ")
    return Review(
        status="pending",
        branch=branch,
        incident=int(number.strip("#") or 0) or None,
        title=title,
        fix=said.get("Fix", ""),
        approver=said.get("Approved-by", ""),
        verified=said.get("Verified", ""),
        commit=sha,
        **more,
    )


def review_dir(skills_dir: Path) -> Path:
    return skills_dir / REVIEW_DIR


class ReviewBook:
    """``skills_dir/.review/book.json``: skill name -> ``Review``. Written atomically."""

    def __init__(self, skills_dir: Path) -> None:
        self.path = review_dir(skills_dir) / "book.json"

    def load(self) -> dict[str, Review]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        known = set(Review.__dataclass_fields__)
        return {
            name: Review(**{k: v for k, v in entry.items() if k in known})
            for name, entry in data.items()
            if isinstance(entry, dict)
        }

    def save(self, entries: dict[str, Review]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({k: asdict(v) for k, v in sorted(entries.items())}, indent=2))
        os.replace(tmp, self.path)

    def put(self, name: str, review: Review) -> None:
        entries = self.load()
        entries[name] = review
        self.save(entries)

    def get(self, name: str) -> Review | None:
        return self.load().get(name)

    def pending(self) -> dict[str, Review]:
        return {k: v for k, v in self.load().items() if v.status == "pending"}

    def signature(self) -> int:
        """Changes whenever the book is written (for a cheap "reload?" check)."""
        try:
            return self.path.stat().st_mtime_ns
        except OSError:
            return 0
