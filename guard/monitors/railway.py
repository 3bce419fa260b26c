"""Watch one Railway service: its latest deployment's status, and rules over its logs.

Each check costs one request for the status, plus one per kind of log the monitor has rules
for (``guard.railway.budget`` counts the same way). The service and environment are resolved
to ids once and the result is kept in the monitor's state, so a restart does not spend a
request on it again.

- ``CRASHED`` / ``FAILED`` are firing signals on ``<environment>/<service>``; ``SUCCESS`` and
  ``SLEEPING`` (an idle serverless app) are ok signals that let the incident resolve; states in
  between (``BUILDING``, ``DEPLOYING``...) say nothing either way.
- Log rules match lines after a ``LogCursor`` (timestamp plus the digests of lines seen at it)
  kept per deployment in the state, which the runtime persists with the incidents: a restart
  neither re-counts nor skips a line. Log signals have their own targets (``...:logs``,
  ``...:build``), so a deployment turning ``SUCCESS`` does not resolve a log incident.
- On the first check ever, ``start: end`` skips the history already there; a deployment that
  appears later is read from its first line.
- Lines join into multi-line events (``multiline``; ``guard.monitors.railway_events``): a
  trace counts once by its summary line, with its lines as evidence; a last event that may go
  on is left for the next check (the cursor stays before it).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from guard.config import Settings
from guard.domain.exceptions import MonitorError, RailwayError
from guard.domain.records import Grouping, Observation, Severity, Signal
from guard.grouping.rules import rule_groupers
from guard.monitors.multiline import Event, Framer
from guard.monitors.railway_events import complete, matched
from guard.playbooks.models import LogRule, RailwayMonitorSpec
from guard.railway.client import RailwayClient
from guard.railway.cursor import LogCursor, normalise
from guard.railway.models import Deployment, DeploymentStatus, LogLine, Target
from guard.railway.targets import resolve_target
from guard.util.saferegex import RuleSet

FIRING = {
    DeploymentStatus.CRASHED: "railway_deployment_crashed",
    DeploymentStatus.FAILED: "railway_deployment_failed",
}
HEALTHY = {DeploymentStatus.SUCCESS, DeploymentStatus.SLEEPING}
MESSAGE_CHARS = 1000
MAX_DISTINCT = 200
MAX_LINE_CHARS = 65536  # a longer message is matched on its start (like max_line_bytes)


class RailwayMonitor:
    """One service in one environment of the configured Railway project."""

    type = "railway"

    def __init__(self, spec: RailwayMonitorSpec, settings: Settings) -> None:
        self.spec = spec
        self.settings = settings.railway
        self.id = spec.id
        self.interval = spec.every
        # Spread polls of many monitors over the interval unless the playbook chose a jitter.
        self.jitter = spec.jitter or min(spec.every * 0.1, 30.0)
        self._client: RailwayClient | None = None
        self._rules = (list(spec.rules), RuleSet([(r.pattern, r.ignore_case) for r in spec.rules]))
        self._build_rules = (
            list(spec.build_rules),
            RuleSet([(r.pattern, r.ignore_case) for r in spec.build_rules]),
        )
        self._framer = Framer(spec.multiline_spec)
        self._groupers = {
            key: rule_groupers(
                [
                    (r.group_by, re.compile(r.pattern, re.IGNORECASE if r.ignore_case else 0))
                    for r in rules[0]
                ],
                default=spec.group_by,
                log_format=spec.format,
            )
            for key, rules in (("logs", self._rules), ("build", self._build_rules))
        }

    def _railway(self) -> RailwayClient:
        if self._client is None:
            self._client = RailwayClient(self.settings)
        return self._client

    async def check(self, state: Mapping[str, Any]) -> Observation:
        try:
            return await self._check(state)
        except RailwayError as exc:
            raise MonitorError(f"Railway service {self.spec.service!r}: {exc}") from None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- one check ------------------------------------------------------------------------------

    async def _target(self, state: Mapping[str, Any]) -> Target:
        wanted = [self.spec.service, self.spec.environment or self.settings.environment_id]
        cached = state.get("target")
        if isinstance(cached, dict) and cached.get("wanted") == wanted:
            return Target.model_validate(cached["ids"])
        return await resolve_target(
            self._railway(), self.settings, self.spec.service, self.spec.environment
        )

    async def _check(self, state: Mapping[str, Any]) -> Observation:
        target = await self._target(state)
        client = self._railway()
        new_state: dict[str, Any] = {
            "target": {
                "wanted": [
                    self.spec.service,
                    self.spec.environment or self.settings.environment_id,
                ],
                "ids": target.model_dump(),
            },
            "last_success": state.get("last_success"),
        }
        deployment = await client.latest_deployment(target.environment_id, target.service_id)
        signals: list[Signal] = []
        if deployment is None:
            return Observation(signals, new_state)
        status = self._status_signal(target, deployment, state.get("last_success"))
        if status is not None:
            signals.append(status)
        if deployment.status == DeploymentStatus.SUCCESS:
            new_state["last_success"] = deployment.id
        first_ever = not state
        for key, rules, fetch in (
            ("logs", self._rules, client.deployment_logs),
            ("build", self._build_rules, client.build_logs),
        ):
            if not rules[0]:
                continue
            cursor = LogCursor.from_state(state.get(key), deployment.id)
            skip = cursor is None and first_ever and self.spec.start == "end"
            if cursor is None:  # a deployment never read: from its creation (or, skipping
                # history, from whatever Railway returns last)
                since = None if skip else normalise(deployment.created_at.isoformat())
                cursor = LogCursor(deployment.id, since)
            lines = await fetch(deployment.id, since=cursor.timestamp, filter=self.spec.log_filter)
            before = LogCursor(cursor.deployment_id, cursor.timestamp, list(cursor.digests))
            fresh = cursor.advance(lines)
            if not skip:  # off the event loop: matching costs up to a budget per line
                found, upto = await asyncio.to_thread(
                    self._match, target, deployment, key, rules, fresh
                )
                signals.extend(found)
                if upto < len(fresh):  # the last event may go on: read it again next check
                    before.advance(fresh[:upto])
                    cursor = before
            new_state[key] = cursor.as_state()
        return Observation(signals, new_state)

    def _details(self, target: Target, deployment: Deployment) -> dict[str, Any]:
        return {
            "deployment_id": deployment.id,
            "service_id": target.service_id,
            "service": target.service_name,
            "environment_id": target.environment_id,
            "environment": target.environment_name,
            "project_id": target.project_id,
            "status": deployment.status.value,
            "created_at": deployment.created_at.isoformat(),
        }

    def _status_signal(
        self, target: Target, deployment: Deployment, last_success: str | None
    ) -> Signal | None:
        details = self._details(target, deployment)
        if deployment.status in FIRING:
            if last_success and last_success != deployment.id:
                details["last_success_deployment_id"] = last_success
            return Signal(
                monitor_id=self.id,
                source="railway",
                target=target.label,
                kind=FIRING[deployment.status],
                severity=self.spec.severity,
                message=f"Railway deployment {deployment.id} of {target.label} is "
                f"{deployment.status.value}",
                details=details,
            )
        if deployment.status in HEALTHY:
            return Signal(
                monitor_id=self.id,
                source="railway",
                target=target.label,
                kind="railway_deployment_ok",
                status="ok",
                message=f"Railway deployment {deployment.id} of {target.label} is "
                f"{deployment.status.value}",
                details=details,
            )
        return None

    def _match(
        self,
        target: Target,
        deployment: Deployment,
        key: str,
        rules: tuple[list[LogRule], RuleSet],
        lines: list[LogLine],
    ) -> tuple[list[Signal], int]:
        """Fold matching lines and multi-line events into one signal per (rule, group), with
        counts; also how many of ``lines`` were counted (a last event that may go on waits).

        Each message is matched on its first ``MAX_LINE_CHARS`` characters (the signal says
        when it was cut), by the same bounded engines as log files (``guard.util.saferegex``)."""
        specs, ruleset = rules
        groupers = self._groupers[key]
        texts = [line.message[:MAX_LINE_CHARS] for line in lines]
        upto = complete(self._framer, lines, texts)
        lines, texts = lines[:upto], texts[:upto]
        found: dict[tuple[str, ...], tuple[LogRule, LogLine, Grouping, str, Event | None]] = {}
        counts: dict[tuple[str, ...], int] = {}
        cut: set[tuple[str, ...]] = set()
        indexes = ruleset.first_many([(t, None) for t in texts])
        for i, index, event in matched(self._framer, texts, indexes):
            rule, line = specs[index], lines[i]
            summary = texts[i] if event is None else event.summary
            grouper = groupers[index]
            by = summary if grouper.templated else (event.line if event else summary)
            fold, grouping = grouper.group(rule.kind, by)
            if fold not in found and len(found) >= MAX_DISTINCT:
                fold = (rule.kind, "<more distinct messages>")
            found.setdefault(fold, (rule, line, grouping, summary, event))
            counts[fold] = counts.get(fold, 0) + 1
            if len(line.message) > MAX_LINE_CHARS:
                cut.add(fold)
        where = f"{target.label}:{key}"
        signals = [
            Signal(
                monitor_id=self.id,
                source="railway",
                target=where,
                kind=rule.kind,
                severity=rule.severity if rule.severity else Severity.error,
                message=summary[:MESSAGE_CHARS],
                count=counts[fold],
                details={
                    **self._details(target, deployment),
                    "rule": rule.pattern,
                    "log": key,
                    "timestamp": line.timestamp,
                    "log_severity": line.severity,
                    **({"line_cut_at_chars": MAX_LINE_CHARS} if fold in cut else {}),
                    **({"evidence": event.evidence, "event_lines": event.lines} if event else {}),
                },
                grouping=grouping,
            )
            for fold, (rule, line, grouping, summary, event) in found.items()
        ]
        return signals, upto
