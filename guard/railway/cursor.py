"""A resumable position in a deployment's log stream: a timestamp plus the lines seen at it.

Railway's log queries take a ``startDate`` and return lines whose ``timestamp`` (an ISO string,
up to nanosecond precision) is at or after it. Asking again from the newest timestamp seen
returns that timestamp's lines again, and several lines can share one timestamp; so the cursor
keeps, besides the timestamp, a digest of each line already counted *at that timestamp* (with
an occurrence number, so two identical lines at one instant still count twice). A line is new
when it is later than the cursor, or at the cursor and not yet in its digests.

Timestamps are compared in a normalised form (UTC, nine fractional digits), never as floats.
The cursor belongs to one deployment: a new deployment starts a new cursor.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from guard.railway.models import LogLine

MAX_DIGESTS = 5000  # lines remembered at one timestamp; a pathological burst beyond is dropped

_ISO = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9})\d*)?(Z|[+-]\d{2}:?\d{2})?$"
)


def normalise(timestamp: str) -> str:
    """``2026-12-02T18:06:00.5+01:00`` -> ``2026-12-02T17:06:00.500000000Z`` (sortable text)."""
    m = _ISO.match(timestamp.strip())
    if m is None:
        raise ValueError(f"not an ISO timestamp: {timestamp!r}")
    day, clock, frac, zone = m.groups()
    nanos = (frac or "").ljust(9, "0")
    if zone in (None, "Z", "+00:00", "+0000", "-00:00"):
        return f"{day}T{clock}.{nanos}Z"
    whole = datetime.fromisoformat(f"{day}T{clock}{zone}")
    offset = whole.utcoffset() or timedelta(0)
    utc = (whole - offset).replace(tzinfo=None)
    return f"{utc.strftime('%Y-%m-%dT%H:%M:%S')}.{nanos}Z"


def _digest(line: LogLine, occurrence: int) -> str:
    raw = f"{line.severity or ''}\x00{line.message}".encode("utf-8", "replace")
    return f"{hashlib.sha256(raw).hexdigest()[:16]}#{occurrence}"


@dataclass
class LogCursor:
    deployment_id: str
    timestamp: str | None = None  # normalised; None: nothing seen yet
    digests: list[str] = field(default_factory=list)

    @classmethod
    def from_state(cls, state: Mapping[str, Any] | None, deployment_id: str) -> LogCursor | None:
        """The cursor saved for ``deployment_id``, or None (a new deployment, or no state)."""
        if not state or state.get("deployment_id") != deployment_id:
            return None
        return cls(deployment_id, state.get("timestamp"), list(state.get("digests") or []))

    def as_state(self) -> dict[str, Any]:
        return {
            "deployment_id": self.deployment_id,
            "timestamp": self.timestamp,
            "digests": self.digests,
        }

    def advance(self, lines: Iterable[LogLine]) -> list[LogLine]:
        """Return the lines not seen before, in time order, and move the cursor past them."""
        ordered = sorted(
            ((normalise(line.timestamp), i, line) for i, line in enumerate(lines)),
            key=lambda t: (t[0], t[1]),
        )
        seen_here = set(self.digests)
        occurrences: dict[tuple[str, str], int] = {}
        fresh: list[LogLine] = []
        newest, newest_digests = self.timestamp, list(self.digests)
        for ts, _, line in ordered:
            if self.timestamp is not None and ts < self.timestamp:
                continue
            base = _digest(line, 0).split("#")[0]
            n = occurrences.get((ts, base), 0)
            occurrences[(ts, base)] = n + 1
            digest = f"{base}#{n}"
            if ts == self.timestamp and digest in seen_here:
                continue
            fresh.append(line)
            if newest is None or ts > newest:
                newest, newest_digests = ts, []
            if len(newest_digests) < MAX_DIGESTS:
                newest_digests.append(digest)
        self.timestamp, self.digests = newest, newest_digests
        return fresh
