"""Replays of signed requests: a captured request sent again must not act again.

With ``hmac_timestamp_header`` the sender signs the Unix time with the body (``<ts>:<body>``,
as Grafana does; Slack and Stripe do the same), so the time cannot be changed without the key:

- a timestamp further than ``replay_window`` from now (either way) is refused (401), so a
  captured request is worthless once that old;
- within the window, each signature is taken once: the same signed request again is a replay
  (409). Signatures are remembered only for the window, so memory is bounded by what the rate
  lets in over it (and by ``KEEP``). They live in memory: across a restart the signed time still
  keeps an older ``resolved`` from ending a newer firing (``guard.triage.redelivery``).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from guard.config.intake import IntakeSource

KEEP = 100_000  # signatures remembered per source at most (the oldest go first)


@dataclass
class Replays:
    """One source's signed timestamps and the signatures it took within ``window``."""

    header: str
    window: float
    clock: Callable[[], float] = time.time
    _taken: OrderedDict[str, float] = field(default_factory=OrderedDict)  # signature -> until

    @classmethod
    def of(cls, source: IntakeSource) -> Replays | None:
        header = source.hmac_timestamp_header
        return None if header is None else cls(header, source.replay_window)

    def signed_at(self, headers: Mapping[str, str]) -> tuple[float | None, str | None]:
        """The signed Unix time, or why the request is refused (missing, not a time, stale)."""
        text = headers.get(self.header.lower(), "").strip()
        try:
            at = float(text)
        except ValueError:
            return None, f"{self.header}: missing or not a Unix time"
        if not math.isfinite(at):
            return None, f"{self.header}: not a Unix time"
        age = self.clock() - at
        if abs(age) > self.window:
            when = f"{age:.0f}s ago" if age > 0 else f"{-age:.0f}s ahead"
            return None, (
                f"{self.header}: signed {when}, outside replay_window ({self.window:g}s): "
                "a replay, or the sender's clock is off"
            )
        return at, None

    def take(self, signature: str) -> bool:
        """Whether this signature is new within the window (it is remembered then)."""
        now = self.clock()
        while self._taken and (next(iter(self._taken.values())) < now or len(self._taken) > KEEP):
            self._taken.popitem(last=False)
        if signature in self._taken:
            return False
        self._taken[signature] = now + 2 * self.window  # the stamp may be ahead by the window
        return True

    def give_back(self, signature: str) -> None:
        """Forget a signature whose request was not stored: the sender's retry is not a replay."""
        self._taken.pop(signature, None)
