"""Whether a human's fix caused the recovery: only a fix that did is learned.

Verification alone says the fault is gone after the fix, which a no-op run also "achieves" once
the fault went away by itself (a log rule whose lines stopped). So the fault must also be shown
to hold just before the fix (``before``) and to stay gone through ``agent.settle`` after
verification passed (``after``):

- a log rule's fault holds while a line it matches (in any wording) came within the rule's
  ``quiet``: the newest ``last_seen`` of the rule's incidents on that target, or a line the
  running monitor has not read yet;
- any other check's fault holds while the check fails: it is run once more right before the
  fix. A target that can flap may pass that one look between two failures (a crash loop's
  container is "running" for a moment after each restart), so its fault also holds while its
  own signal was seen within ``agent.settle`` (a ``container_restarting`` loop: within
  ``LOOP_GAP``, the longest pause Docker's restart back-off makes). An alert from an
  ``intake:`` source is not re-checked here (its source is asked only afterwards): it is
  taken to hold.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from guard.agent.verify import Verifier, held_for, is_log_rule, last_line_ago
from guard.domain.durations import format_duration
from guard.store.db import Database
from guard.store.models import Incident

LOOP_GAP = 90.0  # seconds: Docker's restart back-off doubles up to a minute between restarts
DEFAULT_QUIET = 60.0  # seconds: a log rule's ``quiet`` when its monitor is no longer configured


@dataclass(frozen=True)
class Evidence:
    """Whether the fault held at one moment, and what showed it."""

    holds: bool
    reason: str

    def as_details(self) -> dict[str, Any]:
        return {"holds": self.holds, "reason": self.reason}


class Causation:
    def __init__(self, db: Database, verifier: Verifier, settle: float) -> None:
        self.db = db
        self.verifier = verifier
        self.settle = settle  # ``agent.settle``

    def quiet(self, inc: Incident) -> float:
        """The ``quiet`` of the log rule that opened ``inc`` (its pattern, else its kind)."""
        rules = list(getattr(self.verifier.specs.get(inc.monitor_id), "rules", []) or [])
        pattern = (inc.details or {}).get("rule")
        rule = next((r for r in rules if r.pattern == pattern), None) or next(
            (r for r in rules if r.kind == inc.kind), None
        )
        return float(rule.quiet) if rule is not None else DEFAULT_QUIET

    def _last_line_ago(self, inc: Incident) -> float | None:
        return last_line_ago(self.db, inc)

    async def before(self, inc: Incident) -> Evidence:
        """Whether the fault holds now, right before a fix runs."""
        if is_log_rule(inc):
            quiet = self.quiet(inc)
            ago = await asyncio.to_thread(self._last_line_ago, inc)
            if ago is not None and ago <= quiet:
                return Evidence(True, f"a matching line came {format_duration(ago)} before it")
            looked = await self.verifier.once(inc)
            if looked is not None and not looked[0]:
                return Evidence(True, f"a new matching line just before it: {looked[1]}")
            since = format_duration(ago) if ago is not None else "as long as Guard knows"
            return Evidence(
                False,
                f"the fault was not present before it (no matching line for {since}; "
                f"the rule's quiet is {format_duration(quiet)})",
            )
        looked = await self.verifier.once(inc)
        if looked is None:
            return Evidence(True, "its source is asked only after the fix")
        passed, seen = looked
        ago = await asyncio.to_thread(self._last_line_ago, inc)  # its own signal, last seen
        within = LOOP_GAP if inc.kind == "container_restarting" else self.settle
        if passed and ago is not None and ago <= within:
            return Evidence(
                True,
                f"the check passed at that moment ({seen}), but the fault was seen "
                f"{format_duration(ago)} before it",
            )
        if passed:
            return Evidence(
                False, f"the fault was not present before it (the check passed: {seen})"
            )
        return Evidence(True, f"the check failed just before it: {seen}")

    async def after(self, inc: Incident, verdict: str = "") -> Evidence:
        """Whether the fault came back within ``settle`` after verification passed. A verdict
        whose pass already held ``settle`` (a target that can flap) is looked at once more,
        not waited for twice."""
        if self.settle <= 0:
            return Evidence(False, "not checked again (agent.settle is 0)")
        if held_for(verdict) >= self.settle:
            looked = await self.verifier.once(inc)
            if looked is None or looked[0]:
                return Evidence(False, "still gone: verification held it through agent.settle")
            return Evidence(True, f"the fault came back as verification ended: {looked[1]}")
        if is_log_rule(inc):
            looked = await self.verifier.once(inc, quiet=self.settle)
        else:
            await asyncio.sleep(self.settle)
            looked = await self.verifier.once(inc)
        wait = format_duration(self.settle)
        if looked is None or looked[0]:
            return Evidence(False, f"still gone {wait} later")
        return Evidence(True, f"the fault came back within {wait}: {looked[1]}")
