"""Trends: a least-squares line over a window of samples, and when it reaches a limit.

A leak or a filling disk grows long before it fails; a straight line fitted to the last
``window`` seconds of samples says when it will reach the limit ("reaches the limit in 14
min"), so the incident opens while there is still time. The fit is pure and cheap (one pass
over at most ``MAX_SAMPLES`` points per target), and it answers only when it can be trusted:
at least ``MIN_SAMPLES`` points spanning a quarter of the window, rising.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

MIN_SAMPLES = 4
MAX_SAMPLES = 240  # per target and metric: a 10 min window at 2.5 s checks


@dataclass(frozen=True)
class Fit:
    """A line ``value = intercept + slope * t`` (``slope`` in units per second)."""

    slope: float
    intercept: float

    def at(self, t: float) -> float:
        return self.intercept + self.slope * t


class Samples:
    """The last ``window`` seconds of one metric of one target, at most ``MAX_SAMPLES``."""

    __slots__ = ("_points", "window")

    def __init__(self, window: float, maxlen: int = MAX_SAMPLES) -> None:
        self.window = window
        self._points: deque[tuple[float, float]] = deque(maxlen=maxlen)

    def add(self, t: float, value: float) -> None:
        """Record ``value`` at time ``t`` (monotonic seconds) and forget what left the window."""
        points = self._points
        if points and t < points[-1][0]:  # the clock went back: start again
            points.clear()
        points.append((t, value))
        while points and points[0][0] < t - self.window:
            points.popleft()

    def __len__(self) -> int:
        return len(self._points)

    def kept(self, at_most: int) -> list[list[float]]:
        """The samples as ``[t, value]`` pairs, thinned evenly to ``at_most`` (the newest kept):
        what a restart needs to go on with the same line."""
        points = list(self._points)
        step = max(1, -(-len(points) // at_most))  # ceil: never more than at_most
        return [[t, v] for t, v in points[::-1][::step][::-1]]

    @classmethod
    def of(cls, window: float, points: list[list[float]]) -> Samples:
        """Samples from ``kept``'s pairs (anything else in them is skipped)."""
        made = cls(window)
        for pair in points:
            if isinstance(pair, list) and len(pair) == 2:
                made.add(float(pair[0]), float(pair[1]))
        return made

    def fit(self) -> Fit | None:
        """The least-squares line, or None without ``MIN_SAMPLES`` spanning a quarter window."""
        return fit(list(self._points), min_span=self.window / 4)

    def time_to(self, limit: float, line: Fit | None = None) -> float | None:
        """Seconds from the last sample until the fitted line (``line``, else fitted now)
        reaches ``limit``; None when it cannot be said (too few samples) or it never will
        (flat or falling)."""
        line = line or self.fit()
        if line is None or line.slope <= 0 or not self._points:
            return None
        now = self._points[-1][0]
        return max(0.0, (limit - line.at(now)) / line.slope)


def fit(points: list[tuple[float, float]], *, min_span: float = 0.0) -> Fit | None:
    """Ordinary least squares over ``(t, value)`` points; None if too few or too close in time."""
    n = len(points)
    if n < MIN_SAMPLES or points[-1][0] - points[0][0] < min_span:
        return None
    t0 = points[0][0]  # centred on the first point: large clock values keep their precision
    mean_t = sum(t - t0 for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - t0 - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - t0 - mean_t) * (v - mean_v) for t, v in points)
    slope = cov / var
    return Fit(slope, mean_v - slope * (mean_t + t0))


def human_duration(seconds: float) -> str:
    """``50 s``, ``14 min``, ``2 h``, ``3 d``: how long until, as a person would say it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"
