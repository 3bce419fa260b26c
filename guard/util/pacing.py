"""Pacing: at most one transaction per ``every`` seconds under load, none held back when quiet.

A token bucket: ``burst`` transactions may go at once, and one more is allowed every ``every``
seconds. After a quiet spell (``burst * every`` seconds with no transaction) the bucket is full,
so the first signal of the spell is stored at once even if a transaction has just run; only a
steady stream of transactions is held to one per ``every``. Pure: the caller gives the clock.
"""

from __future__ import annotations


class Pace:
    def __init__(self, every: float, burst: int, now: float) -> None:
        self.every = every
        self.burst = burst
        self._tokens = float(burst)
        self._at = now

    def wait(self, now: float) -> float:
        """Seconds to wait before a transaction that would start at ``now`` (0: go now)."""
        self._refill(now)
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) * self.every

    def spend(self, now: float) -> None:
        """A transaction starts at ``now``."""
        self._refill(now)
        self._tokens = max(self._tokens - 1, 0.0)

    def _refill(self, now: float) -> None:
        self._tokens = min(self.burst, self._tokens + max(now - self._at, 0.0) / self.every)
        self._at = now
