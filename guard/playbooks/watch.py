"""Playbooks edited while ``guard run`` runs: notice the edit, and say what it changed.

A poll, not inotify: it works the same on bind mounts, network volumes and Kubernetes
ConfigMaps (whose files are swapped by a symlink). Each poll stats the files; only a file whose
mtime or size moved is read again, and a change is a change of content (sha256), so a touch or
a rewrite with the same text is no reload. ``diff_playbooks`` compares two valid configs by
monitor: what to start, stop and replace, and whether anything else a playbook says
(diagnostics, sandbox grants) changed. The signals put a broken edit on Guard itself, kind
``playbook_invalid`` with the file's path as target, and take it off once the files load again.

Tested by ``tests/config/test_playbook_watch.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard.domain.records import Severity, Signal
from guard.playbooks.models import MonitorSpec, Playbook

MONITOR_ID = "playbooks"
KIND = "playbook_invalid"
Stamp = tuple[int, int, str]  # (mtime_ns, size, sha256 of the content)


class PlaybookWatch:
    """The playbook files' contents as last acted on; ``changed()`` says whether they moved.

    A change counts once the files stayed the same for one poll: a file an editor or ``cp`` is
    writing (truncated, then written) is never read half-way, which read as an invalid or, worse,
    a valid but shorter playbook (a CI run under load saw the first)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._seen: dict[Path, Stamp] = self._stamps({})
        self._polled = self._seen  # the files at the last poll

    def _stamps(self, previous: dict[Path, Stamp]) -> dict[Path, Stamp]:
        stamps: dict[Path, Stamp] = {}
        try:
            paths = sorted([*self.folder.glob("*.yaml"), *self.folder.glob("*.yml")])
        except OSError:
            return stamps
        for path in paths:
            try:
                st = path.stat()
                old = previous.get(path)
                if old is not None and old[:2] == (st.st_mtime_ns, st.st_size):
                    stamps[path] = old
                    continue
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                digest = "unreadable"  # a file being replaced; the loader names the problem
                st = None
            stamps[path] = (st.st_mtime_ns, st.st_size, digest) if st else (0, 0, digest)
        return stamps

    def changed(self) -> bool:
        """Whether a file was added, removed, or its content changed since the last change
        counted, and is as it was at the poll before (settled)."""
        stamps = self._stamps(self._polled)
        settled = _digests(stamps) == _digests(self._polled)
        self._polled = stamps
        if not settled or _digests(stamps) == _digests(self._seen):
            return False
        self._seen = stamps
        return True

    @property
    def files(self) -> list[Path]:
        return list(self._seen)


def _digests(stamps: dict[Path, Stamp]) -> dict[Path, str]:
    return {p: s[2] for p, s in stamps.items()}


@dataclass(frozen=True, slots=True)
class PlaybooksDiff:
    """What a reload changes: monitor ids to start, stop and replace, and the playbooks whose
    other parts (diagnostics, sandbox grants, description) changed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    playbooks: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.playbooks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "playbooks": list(self.playbooks),
        }


def active_specs(books: list[Playbook]) -> dict[str, MonitorSpec]:
    """The enabled monitors, by id, in playbook order."""
    return {s.id: s for book in books for s in book.monitors if s.enabled}


def diff_playbooks(old: list[Playbook], new: list[Playbook]) -> PlaybooksDiff:
    """Compare two valid configs; a monitor turned off is removed, one turned on is added."""
    before, after = active_specs(old), active_specs(new)
    rest_before = {b.name: b.model_copy(update={"monitors": []}) for b in old}
    rest_after = {b.name: b.model_copy(update={"monitors": []}) for b in new}
    return PlaybooksDiff(
        added=tuple(i for i in after if i not in before),
        removed=tuple(i for i in before if i not in after),
        changed=tuple(i for i in after if i in before and before[i] != after[i]),
        playbooks=tuple(
            sorted(
                n
                for n in rest_before.keys() | rest_after.keys()
                if rest_before.get(n) != rest_after.get(n)
            )
        ),
    )


def invalid_signal(path: Path, problems: list[str]) -> Signal:
    """``playbook_invalid`` on ``path``: the same problems give the same fingerprint (one
    incident however often they are seen)."""
    return Signal(
        monitor_id=MONITOR_ID,
        source="guard",
        target=str(path),
        kind=KIND,
        severity=Severity.error,
        message=(
            f"playbook {path.name} is invalid, Guard keeps its last good config: "
            + "; ".join(problems)
        )[:1000],
        details={"path": str(path), "problems": problems[:20]},
    )


def valid_signal(path: Path) -> Signal:
    """The ``ok`` that resolves ``path``'s ``playbook_invalid`` incident."""
    return Signal(
        monitor_id=MONITOR_ID,
        source="guard",
        target=str(path),
        kind=KIND,
        message=f"playbook {path.name} loads again",
        status="ok",
    )
