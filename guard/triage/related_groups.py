"""Related signals as people see them: one per monitor and target.

Correlation stores a row per distinct signal that joined (``RelatedSignal``: a log monitor
that wrote two different lines has two rows, each with its own count). Whoever reads an
incident asks a different question: which *other checks* saw this fault? So every view (the
question's line, ``incidents show``, the web console, verification's summary) shows the rows
of one monitor on one target as one related signal: its kinds in the order they joined, the
counts summed, the earliest first seen and the latest last seen. The three-way case (a
container, its HTTP check, its log writing two different lines) is one incident with two
related signals. ``guard incidents split`` splits such a group whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from guard.store.correlation import RelatedSignal
from guard.triage.correlation import EVENT, FIRING, OK, signal_line
from guard.triage.counting import max_severity


@dataclass(frozen=True)
class RelatedGroup:
    """The related rows of one monitor on one target, in the order they joined."""

    rows: tuple[RelatedSignal, ...]

    @property
    def id(self) -> int | None:
        """The first row's id: how ``incidents show`` and ``split`` name the group."""
        return self.rows[0].id

    @property
    def ids(self) -> list[int]:
        return [r.id for r in self.rows if r.id is not None]

    @property
    def monitor_id(self) -> str:
        return self.rows[0].monitor_id

    @property
    def service(self) -> str | None:
        return self.rows[0].service

    @property
    def target(self) -> str:
        return self.rows[0].target

    @property
    def kinds(self) -> list[str]:
        """Each kind once, in the order its row joined."""
        return list(dict.fromkeys(r.kind for r in self.rows))

    @property
    def kind(self) -> str:
        return self.rows[0].kind

    @property
    def count(self) -> int:
        return sum(r.count for r in self.rows)

    @property
    def first_seen(self) -> datetime:
        return min(r.first_seen for r in self.rows)

    @property
    def last_seen(self) -> datetime:
        return max(r.last_seen for r in self.rows)

    @property
    def status(self) -> str:
        """``firing`` if any of its rows fires, else ``ok`` if any check passed, else
        ``event`` (log lines only)."""
        found = {r.status for r in self.rows}
        return FIRING if FIRING in found else OK if OK in found else EVENT

    @property
    def severity(self) -> str:
        worst = self.rows[0].severity
        for r in self.rows[1:]:
            worst = max_severity(worst, r.severity)
        return worst

    @property
    def message(self) -> str:
        """The latest row's message."""
        return max(self.rows, key=lambda r: r.last_seen).message

    def as_dict(self) -> dict[str, Any]:
        """As ``incidents show --json``'s ``related`` and MCP's ``show_incident`` give it
        (fields may be added). ``kind`` is the first kind it joined with, ``kinds`` all of
        them; ``ids`` are its stored rows (one per distinct line or check)."""
        return {
            "id": self.id,
            "monitor": self.monitor_id,
            "service": self.service,
            "kind": self.kind,
            "kinds": self.kinds,
            "target": self.target,
            "count": self.count,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "status": self.status,
            "severity": self.severity,
            "message": self.message,
            "ids": self.ids,
        }


def grouped(rows: list[RelatedSignal]) -> list[RelatedGroup]:
    """``rows`` (in the order they joined) as one group per monitor and target."""
    groups: dict[tuple[str, str], list[RelatedSignal]] = {}
    for row in rows:
        groups.setdefault((row.monitor_id, row.target), []).append(row)
    return [RelatedGroup(tuple(members)) for members in groups.values()]


def group_line(group: RelatedGroup) -> str:
    """How a related signal is named in messages: ``upstream refused, bad gateway on
    /var/log/shop.log (x5)``."""
    return signal_line(", ".join(group.kinds), group.target, group.count)
