"""Railway's rate limits, kept on Guard's side of the wire.

Railway allows a plan-dependent number of requests per hour (Hobby 1000) and per second
(Hobby 10), shared by everything that uses the token. Guard therefore sends every call through
one ``Limiter`` per API endpoint and credential, made of two token buckets:

- an hourly bucket holding at most ``burst`` tokens, refilled at ``(limit - burst) / 3600`` per
  second, so that no sliding hour can ever see more than ``limit`` requests;
- a per-second bucket of one token refilled ``per_second`` times a second, which spaces calls
  at least ``1 / per_second`` apart.

A ``Retry-After`` from Railway pauses the whole limiter, not just the call that received it. A
caller that would have to wait longer than ``max_wait`` gets a ``RailwayError`` instead of
stalling its monitor. ``railway_budget_warnings`` estimates what the configured monitors cost
per hour, for ``guard check-config``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from guard.config import RailwaySettings, Settings
from guard.domain.exceptions import RailwayError
from guard.playbooks.models import Playbook, RailwayMonitorSpec

NEAR_BUDGET = 0.8  # warn above this share of the hourly budget, leaving room for actions


@dataclass
class TokenBucket:
    capacity: float
    rate: float  # tokens per second
    tokens: float = field(init=False)
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.capacity

    def _refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_time(self, now: float) -> float:
        """Seconds until one token is available (0 when one is)."""
        self._refill(now)
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self, now: float) -> None:
        self._refill(now)
        self.tokens -= 1


class Limiter:
    """Hourly and per-second buckets plus a Retry-After pause, shared by all callers."""

    def __init__(self, per_hour: int, per_second: float = 10.0, *, max_wait: float = 60.0) -> None:
        per_hour = max(1, per_hour)
        burst = max(1, min(10, per_hour // 10))
        self.per_hour = per_hour
        self.hourly = TokenBucket(burst, max(per_hour - burst, 1) / 3600)
        self.second = TokenBucket(1, max(per_second, 0.01))
        self.max_wait = max_wait
        self.paused_until = 0.0
        self.sent = 0  # requests let through, for tests and diagnostics
        self._lock = threading.Lock()  # buckets are shared by event loops in several threads

    def pause(self, seconds: float) -> None:
        """Railway said Retry-After: nobody sends before then."""
        with self._lock:
            self.paused_until = max(self.paused_until, time.monotonic() + seconds)

    async def acquire(self) -> None:
        """Wait for permission to send one request, or raise when that would take too long."""
        while True:
            with self._lock:
                now = time.monotonic()
                wait = max(
                    self.paused_until - now, self.hourly.wait_time(now), self.second.wait_time(now)
                )
                if wait <= 0:
                    self.hourly.take(now)
                    self.second.take(now)
                    self.sent += 1
                    return
            if wait > self.max_wait:
                raise RailwayError(
                    f"Guard's Railway request budget is exhausted for the next {wait:.0f}s "
                    f"(railway.max_requests_per_hour={self.per_hour}); poll less often "
                    "(raise every:) or raise the limit if your plan allows",
                    retryable=True,
                )
            await asyncio.sleep(wait)


_limiters: dict[tuple[str, str, int, float], Limiter] = {}
_limiters_lock = threading.Lock()


def shared_limiter(settings: RailwaySettings) -> Limiter:
    """The one limiter for this endpoint and credential (monitors and actions share it)."""
    credential = "project" if settings.project_token is not None else "account"
    key = (
        settings.api_url,
        credential,
        settings.max_requests_per_hour,
        settings.max_requests_per_second,
    )
    with _limiters_lock:
        if key not in _limiters:
            _limiters[key] = Limiter(
                settings.max_requests_per_hour, settings.max_requests_per_second
            )
        return _limiters[key]


def requests_per_check(spec: RailwayMonitorSpec) -> int:
    """Calls one check makes once ids are resolved: status, then each kind of log asked for."""
    return 1 + (1 if spec.rules else 0) + (1 if spec.build_rules else 0)


def estimate_requests_per_hour(playbooks: Iterable[Playbook]) -> dict[str, float]:
    """Steady-state requests per hour of each enabled railway monitor, by monitor id."""
    return {
        spec.id: 3600 / max(spec.every, 0.001) * requests_per_check(spec)
        for book in playbooks
        for spec in book.monitors
        if isinstance(spec, RailwayMonitorSpec) and spec.enabled
    }


def railway_budget_warnings(settings: Settings, playbooks: Iterable[Playbook]) -> list[str]:
    """Human-readable warnings when railway monitors would exceed (or nearly use up) the budget."""
    per_monitor = estimate_requests_per_hour(playbooks)
    if not per_monitor:
        return []
    total = sum(per_monitor.values())
    limit = settings.railway.max_requests_per_hour
    breakdown = ", ".join(f"{mid} {n:.0f}/h" for mid, n in sorted(per_monitor.items()))
    warnings = []
    if total > limit:
        warnings.append(
            f"railway monitors need about {total:.0f} requests/hour ({breakdown}), over "
            f"railway.max_requests_per_hour={limit}: Guard will delay checks to stay inside it; "
            "raise every: on some monitors, or raise the limit if your Railway plan allows more"
        )
    elif total > NEAR_BUDGET * limit:
        warnings.append(
            f"railway monitors need about {total:.0f} requests/hour ({breakdown}), "
            f"{total / limit:.0%} of railway.max_requests_per_hour={limit}: little is left for "
            "remediation actions"
        )
    per_second = settings.railway.max_requests_per_second
    if total / 3600 > per_second:
        warnings.append(
            f"railway monitors need {total / 3600:.1f} requests/second, over the "
            f"limit of {per_second:g}/s"
        )
    return warnings
