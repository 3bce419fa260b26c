"""Verification: re-run the check that opened an incident until it passes or time runs out.

A check that reports on the target (docker, http, railway, kubernetes) passes on an ``ok``
signal for it; a monitor that can look at one target alone (``TargetedMonitor``: Docker, one
``inspect``) is asked about that target only. A log rule (a log file's, or a Railway
deployment's logs) has no ``ok``: it passes when a whole ``quiet`` period goes by with no new
line of the incident's kind, read from where the running monitor is. A ``monitor_error``
incident passes when the monitor works. What a kind needs (its monitor's state, log rules only)
its ``MonitorKind.verification`` says. An incident that an ``intake:`` source opened is
verified by that source (``verify_alerts.SOURCE_VERIFIERS``). An incident with related signals
(``guard.triage.correlation``) is verified only when its own check and every related signal's
check pass: they are re-run side by side, each by its own monitor.
The first check runs as soon as the remedy returns; while it fails, the next ones follow after
``FIRST_RECHECK``, then twice as long each time, up to the step's ``interval``.
A pass of a target that can flap is no cure by itself: a container in a restart loop is
"running" for a moment between restarts. Such a pass counts only once the check kept passing
for the settle period (the step's ``settle``, else ``agent.settle``), a container on the same
start (its ``started_at`` and ``restart_count`` unchanged) through it; a failure or a restart
in between starts the search for a pass again. A target can flap when its incident is
``container_restarting``, reopened or flapping, or its container has a restart policy or was
restarted by one. The pass must come within the step's ``timeout``; its settle period may end
after it.
Verification reads monitor state (log positions, and the Railway ids the monitor resolved, so an
attempt costs no lookups) but never writes it, so the running monitors still see every line.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from guard.agent.verify_alerts import SOURCE_VERIFIERS
from guard.config import Settings
from guard.domain.durations import format_duration
from guard.domain.records import Signal, utcnow
from guard.harness import spans
from guard.harness.crashpoints import reached
from guard.monitors import Monitor, TargetedMonitor, Verification, build_monitor, monitor_kind
from guard.playbooks.models import MonitorSpec
from guard.skills.model import VerifySpec
from guard.store.correlation import RelatedSignal
from guard.store.db import Database
from guard.store.models import Incident
from guard.store.state import get_state
from guard.triage.correlation import related_of, signal_line
from guard.triage.related_groups import grouped

STAYED = re.compile(r"; stayed up ([0-9.]+)s\b")  # how a settled verdict says it (``held_for``)
FIRST_RECHECK = 0.05  # seconds before the second check; the wait doubles up to ``interval``
RESTARTING_POLICIES = frozenset({"always", "unless-stopped", "on-failure"})


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    attempts: int


def _verification(incident: Any) -> Verification:
    kind = monitor_kind(incident.source)
    return kind.verification if kind is not None else Verification()


def can_flap(incident: Any, passed: Signal) -> bool:
    """Whether a pass of ``incident``'s check may be a moment between failures."""
    if incident.kind == "container_restarting" or getattr(incident, "flapping", False):
        return True
    if getattr(incident, "reopen_count", 0):
        return True
    facts = passed.details
    return facts.get("restart_policy") in RESTARTING_POLICIES or bool(facts.get("restart_count"))


def held_for(verdict: str) -> float:
    """How long the pass a verdict reports held (its settle period; 0: counted at once). The
    run's message is the verdict, stored: a restart between verification and learning knows."""
    found = STAYED.search(verdict)
    return float(found.group(1)) if found else 0.0


def restarted(first: Signal, now: Signal) -> bool:
    """Whether the target restarted between two passing looks (a container's start changed)."""
    return any(
        first.details.get(key) != now.details.get(key)
        for key in ("started_at", "restart_count")
        if key in first.details
    )


def last_line_ago(db: Database, inc: Any) -> float | None:
    """Seconds since the running monitor last saw a signal of the incident's kind (a log
    rule's line) on its target."""
    with db.session() as session:
        last = session.exec(
            select(func.max(col(Incident.last_seen))).where(
                Incident.monitor_id == inc.monitor_id,
                Incident.kind == inc.kind,
                Incident.target == inc.target,
            )
        ).one()
    return None if last is None else max(0.0, (utcnow() - last).total_seconds())


def is_log_rule(incident: Any) -> bool:
    """Whether a log rule opened ``incident`` (its signals carry the rule that matched)."""
    return _verification(incident).log_rules_only or "rule" in (incident.details or {})


class Verifier:
    """Builds fresh monitor instances from the playbooks to re-run their checks."""

    def __init__(
        self, db: Database, specs: dict[str, MonitorSpec], settings: Settings | None = None
    ) -> None:
        self.db = db
        self.specs = specs
        self.settings = settings

    def _state(self, monitor_id: str) -> dict[str, Any]:
        with self.db.session() as session:
            return get_state(session, f"monitor:{monitor_id}")

    def _related(self, incident: Any) -> list[RelatedSignal]:
        if self.db is None or getattr(incident, "id", None) is None:
            return []
        with self.db.session() as session:
            return related_of(session, incident.id)

    async def verify(self, incident: Any, spec: VerifySpec) -> Verdict:
        """Re-run the incident's check, and each related signal's (all must pass)."""
        related = await asyncio.to_thread(self._related, incident)
        if not related:
            return await self.verify_one(incident, spec)
        checked = [r for r in related if r.monitor_id in self.specs]
        verdicts = await asyncio.gather(
            self.verify_one(incident, spec), *(self.verify_one(r, spec) for r in checked)
        )
        own, others = verdicts[0], verdicts[1:]
        failed = [(r, v) for r, v in zip(checked, others, strict=True) if not v.passed]
        attempts = max(v.attempts for v in verdicts)
        if not own.passed:
            return Verdict(False, own.reason, attempts)
        if failed:
            r, v = failed[0]
            line = signal_line(r.kind, r.target, r.count)
            return Verdict(False, f"related signal {line} still fails: {v.reason}", attempts)
        shown = len(grouped(checked))  # one per monitor and target, as the incident shows them
        return Verdict(True, f"{own.reason}; and {shown} related check(s) pass", attempts)

    async def verify_one(self, incident: Any, spec: VerifySpec) -> Verdict:
        """Re-run the check of one incident (or related signal) until it passes."""
        mspec = self.specs.get(incident.monitor_id)
        by_source = SOURCE_VERIFIERS.get(incident.source)
        if mspec is None and by_source is not None:
            sources = self.settings.intake if self.settings is not None else []
            return Verdict(*await by_source(self.db, sources).verify(incident, spec))
        if mspec is None:
            return Verdict(False, f"monitor {incident.monitor_id!r} is no longer configured", 0)
        monitor = build_monitor(mspec, settings=self.settings)
        try:
            return await self._loop(monitor, incident, spec)
        finally:
            await monitor.close()

    async def once(self, incident: Any, quiet: float = 0.0) -> tuple[bool, str] | None:
        """One look at the incident's own check, no retry: (passes, what it saw); a log rule
        passes when no new line of it comes within ``quiet``. None: Guard cannot re-run it
        (an intake source's alert, or a monitor no longer configured)."""
        mspec = self.specs.get(incident.monitor_id)
        if mspec is None:
            return None
        monitor = build_monitor(mspec, settings=self.settings)
        try:
            return await self._once(monitor, incident, VerifySpec(quiet=quiet))
        finally:
            await monitor.close()

    def settle_for(self, incident: Any, spec: VerifySpec, passed: Signal) -> float:
        """How long a pass of ``incident``'s check must hold (0: it counts at once)."""
        if spec.settle is not None:
            return spec.settle
        if self.settings is None or not can_flap(incident, passed):
            return 0.0
        return self.settings.agent.settle

    async def _loop(self, monitor: Monitor, incident: Any, spec: VerifySpec) -> Verdict:
        deadline = time.monotonic() + spec.timeout
        attempts, reason, broke = 0, "not checked", ""
        delay = min(FIRST_RECHECK, spec.interval)
        first: Signal | None = None  # the pass being held, and since when
        since = settle = 0.0
        while True:
            attempts += 1
            looked_at = time.monotonic()  # a look may take a while (a log rule's quiet)
            passed, reason, seen = await self._look(monitor, incident, spec)
            spans.mark("verify.check", incident.target)
            reached("verify.during")
            now = time.monotonic()
            if first is not None and (not passed or (seen is not None and restarted(first, seen))):
                what = "failed again" if not passed else "restarted"
                broke = f"it {what} {now - since:.1f}s after it passed"
                first = None
            if passed and first is None and looked_at <= deadline:  # a look begun in time
                settle = self.settle_for(incident, spec, seen) if seen is not None else 0.0
                if settle <= 0:
                    return Verdict(True, reason, attempts)
                first, since = seen, now
            if first is not None:
                if now - since >= settle:
                    return Verdict(True, f"{reason}; stayed up {settle:g}s", attempts)  # STAYED
                await asyncio.sleep(min(spec.interval, since + settle - now))
                continue
            if now + delay > deadline:
                why = f"{reason}; a pass did not hold: {broke}" if broke else reason
                return Verdict(False, f"still failing after {spec.timeout:g}s: {why}", attempts)
            await asyncio.sleep(delay)
            delay = min(delay * 2, spec.interval)

    async def _once(self, monitor: Monitor, incident: Any, spec: VerifySpec) -> tuple[bool, str]:
        passed, reason, _ = await self._look(monitor, incident, spec)
        return passed, reason

    async def _look(
        self, monitor: Monitor, incident: Any, spec: VerifySpec
    ) -> tuple[bool, str, Signal | None]:
        """One run of the check: (passes, what it saw, the target's ``ok`` signal if any)."""
        log_rule = is_log_rule(incident)
        stateful = log_rule or _verification(incident).reads_state
        state = await asyncio.to_thread(self._state, monitor.id) if stateful else {}
        if log_rule and spec.quiet > 0:
            await asyncio.sleep(spec.quiet)
            ago = await asyncio.to_thread(last_line_ago, self.db, incident)
            if ago is not None and ago < spec.quiet:  # the stream saw one (a poll may not)
                return False, f"a new {incident.kind} line {format_duration(ago)} ago", None
        try:
            alone = not stateful and incident.kind != "monitor_error"
            if alone and isinstance(monitor, TargetedMonitor):
                obs = await monitor.check_target(incident.target)  # the target alone: cheaper
            else:
                obs = await monitor.check(state)
        except Exception as exc:
            return False, f"check failed: {exc}", None
        if incident.kind == "monitor_error":
            return True, f"monitor {monitor.id} works again", None
        mine = [
            s
            for s in obs.signals
            if s.target == incident.target and (not log_rule or s.kind == incident.kind)
        ]
        ok = next((s for s in mine if s.status == "ok"), None)
        if ok is not None:
            return True, ok.message, ok
        firing = [s for s in mine if s.status == "firing"]
        if firing:
            return False, firing[0].message, None
        if log_rule:
            return True, f"no new {incident.kind} line for {spec.quiet:g}s", None
        return False, f"{incident.target} was not found by monitor {monitor.id}", None
