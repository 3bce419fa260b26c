"""Triage: turn signals into incidents, one database transaction per batch.

- A firing signal counts toward its check's ``for: N``; once N consecutive failures are seen,
  it lands on the open incident with the same fingerprint (count, last seen) or opens one.
- A firing signal whose fingerprint matches an incident resolved within ``flap_window`` reopens
  that incident instead of opening a new one; after ``flap_threshold`` reopenings the incident
  is marked flapping (announced once) and resolves only after the check has passed for a
  whole ``flap_window``, so a bouncing service is one quiet incident, not a stream of messages.
  Correlation is decided first: a live incident of its service takes it (``correlation``).
- An ``ok`` signal resets the check's counter and, when auto-resolve is on, resolves the
  check's incidents that it may (``triage.passing``: a pass the agent's diagnosis holds back is
  tried again every ``CALM_EVERY``); a log rule's resolves once no matching line came for
  ``resolve_after`` (``triage.quiet``), swept every ``CALM_EVERY``.
- A signal on a muted incident whose mute or silence ended opens it again (``quiet.wake``).
- Which incident a signal belongs to is its fingerprint: source, target, kind and either the
  masked message or, for log rules, their ``group_by`` key (the event template's durable id by
  default; see ``guard.grouping``).
- The storm breaker (``triage.storm``) caps the new incidents one monitor opens per window.
- Monitor state in each ``Observation`` (log offsets) is saved in the same transaction.
- A passing check costs no write when nothing changed: check states are remembered as written,
  and a check known to have no incident to resolve is not asked about for a while
  (``triage.passing``).

Tested by ``tests/correlation/test_triage_correlation.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from guard import cluster
from guard.config import TriageSettings
from guard.domain.fingerprint import fingerprint, keyed_fingerprint
from guard.domain.records import IncidentEvent, Observation, Signal, utcnow
from guard.grouping.templates import TemplateBook
from guard.harness import spans
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import opened
from guard.store.db import Database
from guard.store.models import ACTIVE_STATES, Incident
from guard.store.state import get_state, get_states, put_states
from guard.triage import counting, flapping, quiet, redelivery, storm
from guard.triage.correlation import Correlation
from guard.triage.counting import ACTOR, incident_event
from guard.triage.holds import Holds
from guard.triage.passing import Passing
from guard.triage.waiting import KEY as WAITING_KEY
from guard.triage.waiting import Waiting

CALM_EVERY = 1.0  # seconds between looks for storms gone quiet (their window is minutes)
CACHED_CHECKS = 20_000  # check states kept in memory (each intake alert is a check of its own)


@dataclass(frozen=True)
class TriagePolicy:
    """How one monitor's signals become incidents."""

    for_count: int = 1
    auto_resolve: bool = True
    resolve_after: float = 0.0  # a log rule's incident ends this long after its last line


def incident_title(sig: Signal) -> str:
    return f"{sig.kind.replace('_', ' ')} on {sig.target}"


class Triage:
    """Deduplicates signals into durable incidents."""

    def __init__(
        self,
        db: Database,
        settings: TriageSettings,
        policies: dict[str, TriagePolicy] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.policies = policies or {}
        self.templates = TemplateBook()
        self.correlation = Correlation(  # its services: Guard's
            settings.correlate_window, cause_lead=settings.cause_lead
        )
        self.holds = Holds(self.correlation.service)  # Guard's own remedies' expected effects
        self.waiting = Waiting(settings.symptom_wait)  # dependants' symptoms, before they open
        self._storms = storm.StormBatch(settings.max_new_incidents, settings.storm_window)
        self._checks: dict[str, dict[str, Any]] = {}  # check states, written once per batch
        self._written: dict[str, dict[str, Any]] = {}  # check states as stored
        self._fetched: dict[str, dict[str, Any]] = {}  # this batch's, read at its start
        self.passing = Passing(self.correlation, settings.flap_window)
        self._calmed_at = -CALM_EVERY
        self._templates_begun = False

    def policy(self, monitor_id: str) -> TriagePolicy:
        default = TriagePolicy(auto_resolve=self.settings.auto_resolve)
        return self.policies.get(monitor_id) or default

    def process(
        self, observations: Sequence[Observation], *, release_all: bool = False
    ) -> list[IncidentEvent]:
        """Apply a batch of observations, then the waiting symptoms now due (all of them with
        ``release_all``: a single check, ``run_once``); return what happened to incidents."""
        events: list[IncidentEvent] = []
        targets = [s.target for o in observations for s in o.signals] if spans.enabled() else []
        for target in targets:
            spans.mark("triage.taken", target)
        self._storms = storm.StormBatch(
            self.settings.max_new_incidents, self.settings.storm_window, self.correlation.service
        )
        self._checks = {}
        self.holds.begin()
        try:
            self._templates_begun = False  # begun by the batch's first template signal
            with self.db.session() as session:
                states: dict[str, dict[str, Any]] = {}  # written together, at the batch's end
                self._prefetch(session, observations)
                self.waiting.load(session)
                for obs in observations:
                    for sig in obs.signals:
                        reached("triage.signal_stored")
                        if sig.status == "ok":
                            self._passed(session, sig, events)
                        else:
                            self._failed(session, sig, events)
                    if obs.monitor_id and obs.state:
                        states[f"monitor:{obs.monitor_id}"] = obs.state
                for sig in self.waiting.due(everything=release_all):  # after the batch's causes
                    self._failed(session, sig, events, released=True)
                if self.waiting.changed:
                    states[WAITING_KEY] = self.waiting.state()
                for key, value in self._checks.items():
                    if self._written.get(key) != value:
                        states[key] = value
                put_states(session, states)
                for key in states:
                    if key.startswith("monitor:"):
                        reached("logfile.cursor_save")  # saved, in the batch's transaction
                folded = self._storms.write()
                if time.monotonic() - self._calmed_at >= CALM_EVERY:
                    storm.calm_storms(session, self.settings.storm_window, events, folded)
                    quiet.resolve_quiet(
                        session, self._resolve_after(), events, self.correlation.holds
                    )
                    self.passing.retry_held(session, lambda s: self._ok_since(session, s), events)
                    self._calmed_at = time.monotonic()
                cluster.current().fence(session)  # a replica that does not lead stores nothing
        except BaseException:
            self.templates.reset()  # it may hold templates the rollback just took back
            self.waiting.forget()
            self._written.clear()
            self.passing.forget()
            raise
        if len(self._written) + len(self._checks) > CACHED_CHECKS:  # alerts are unbounded:
            self._written.clear()  # these are caches, re-read from the store when needed
            self.passing.forget()
        self._written.update(self._checks)
        self.waiting.changed = False
        for target in targets:
            spans.mark("incident.stored", target)
        return events

    def _resolve_after(self) -> dict[str, float]:
        """Monitor id -> its log rules' ``resolve_after`` (auto-resolving monitors only)."""
        return {
            monitor_id: p.resolve_after
            for monitor_id, p in self.policies.items()
            if p.auto_resolve and p.resolve_after > 0
        }

    def _prefetch(self, session: Session, observations: Sequence[Observation]) -> None:
        """Read the batch's check states not known yet in one go (a notification of a
        thousand new alerts is two SELECTs, not a thousand), and look for what its passes may
        resolve in one more."""
        keys = {f"check:{s.check_key}" for o in observations for s in o.signals}
        unknown = [k for k in keys if k not in self._written]
        self._fetched = get_states(session, unknown) if unknown else {}
        self.passing.look(session, [s for o in observations for s in o.signals if s.status == "ok"])

    def _check(self, session: Session, key: str) -> dict[str, Any]:
        if key not in self._checks:
            known = self._written.get(key, self._fetched.get(key))
            self._checks[key] = dict(known) if known is not None else get_state(session, key)
        return self._checks[key]

    def identify(self, session: Session, sig: Signal) -> tuple[str, int | None, bool]:
        """The fingerprint of ``sig``; when grouped by template, the template's id and whether
        that template is new (no incident can have it yet)."""
        grouping = sig.grouping
        if grouping is None:
            return fingerprint(sig.source, sig.target, sig.kind, sig.message), None, False
        template_id: int | None = None
        if grouping.by == "fields":
            key = "fields:" + json.dumps(grouping.fields)
        elif grouping.by == "rule":
            key = f"rule:{sig.details.get('rule', '')}"
            if grouping.content:  # an alert-style rule: its template only shown (``rules``)
                template_id = self._template(session, grouping.content, sig.count)[0]
        else:
            template_id, new = self._template(session, grouping.content, sig.count)
            key = f"template:{template_id}"
            return keyed_fingerprint(sig.source, sig.target, sig.kind, key), template_id, new
        return keyed_fingerprint(sig.source, sig.target, sig.kind, key), template_id, False

    def _template(self, session: Session, content: str, lines: int) -> tuple[int, bool]:
        if not self._templates_begun:
            self.templates.begin(session)
            self._templates_begun = True
        return self.templates.assign(session, content, lines)

    # -- failing checks -------------------------------------------------------------------------

    def _failed(
        self,
        session: Session,
        sig: Signal,
        events: list[IncidentEvent],
        *,
        released: bool = False,
    ) -> None:
        """``released``: a symptom that waited (``triage.waiting``), counted when it came."""
        if self.holds.expected(session, sig):  # Guard's own remedy caused it: noted, no more
            return
        self.passing.failed(sig.check_key)
        policy = self.policy(sig.monitor_id)
        if released:
            failures = int(self._check(session, f"check:{sig.check_key}").get("failures", 0))
            self._land(session, sig, max(failures, policy.for_count), policy, events, True)
            return
        check = self._check(session, f"check:{sig.check_key}")
        failures = int(check.get("failures", 0)) + sig.count
        was = check.get("seen")  # when its check last fired: is an incident still firing?
        seen = max(datetime.fromisoformat(was), sig.observed_at) if was else sig.observed_at
        self._checks[f"check:{sig.check_key}"] = {
            "failures": failures,
            "ok_since": None,
            "last": "firing",
            "seen": seen.isoformat(),
        }
        if failures < policy.for_count:
            return
        self._land(session, sig, failures, policy, events, False)

    def _land(
        self,
        session: Session,
        sig: Signal,
        failures: int,
        policy: TriagePolicy,
        events: list[IncidentEvent],
        released: bool,
    ) -> None:
        """Count, join, reopen or open: where a firing signal past its ``for: N`` goes."""
        fp, template_id, new = self.identify(session, sig)
        recent = None
        if not new:
            incident = session.exec(
                select(Incident)
                .where(Incident.fingerprint == fp, col(Incident.state).in_(ACTIVE_STATES))
                .order_by(col(Incident.id).desc())
                .limit(1)
            ).first()
            if incident is not None:
                counting.count(session, incident, sig)
                quiet.wake(session, incident, events, sig.observed_at)  # its mute ended
                return
            joined = self.correlation.joined(session, fp)
            if joined is not None:  # a related signal of an open incident
                self.correlation.count(session, joined, sig)
                return
            recent = flapping.recently_resolved(session, fp, sig.observed_at, self.settings)
            if recent is not None and redelivery.counted(recent.details, sig):
                return  # a late retry of what it counted before resolving
            if recent is not None and flapping.asked_before_verdict(recent, sig):
                flapping.note_stale(session, recent, sig)  # the next check decides
                return
        # correlation before reopening: a live fault of its service takes it first
        root = self.correlation.root(session, sig, fp, self._seen(session))
        if root is None and not released and self._waits(sig):
            return  # a dependant's symptom: its cause may be a moment behind (``waiting``)
        if root is None and recent is not None:
            flapping.reopen(session, recent, sig, events, self.settings)
            return
        if self._storms.over_cap(session, sig.monitor_id):  # the storm breaker takes it
            text = self.templates.text(template_id) if template_id is not None else None
            key = f"template:{template_id}" if text is not None else f"message:{sig.message[:300]}"
            self._storms.take(session, sig, key, text or sig.message, events)
            return
        self._storms.opened(sig.monitor_id)  # a join counts toward the cap like an open
        if root is not None:  # one fault, one incident: it joins as a related signal
            self.correlation.join(session, root, sig, fp, events, template_id)
            return
        self._open(session, sig, fp, failures, policy, events, template_id)

    def _waits(self, sig: Signal) -> bool:
        """Whether ``sig`` is held for ``triage.symptom_wait`` (and is now)."""
        return self.waiting.waits(sig, self.correlation.services) and self.waiting.hold(sig)

    def _seen(self, session: Session) -> Callable[[str], str | None]:
        """When a check last fired (ISO time; None if not since this was recorded)."""
        return lambda check_key: self._check(session, f"check:{check_key}").get("seen")

    def _open(
        self,
        session: Session,
        sig: Signal,
        fp: str,
        failures: int,
        policy: TriagePolicy,
        events: list[IncidentEvent],
        template_id: int | None = None,
    ) -> None:
        # A check needing N failures opens with count N; a log rule with its line count.
        count = max(sig.count, failures) if policy.for_count > 1 else sig.count
        incident = Incident(
            fingerprint=fp,
            check_key=sig.check_key,
            monitor_id=sig.monitor_id,
            source=sig.source,
            target=sig.target,
            kind=sig.kind,
            severity=sig.severity.value,
            title=incident_title(sig),
            message=sig.message,
            count=count,
            opened_at=utcnow(),
            first_seen=sig.observed_at,
            last_seen=sig.observed_at,
            details=redelivery.remember(self._details(sig, template_id), sig),
        )
        session.add(incident)
        session.flush()
        opened(
            session,
            incident,
            sig.message,
            actor=ACTOR,
            fingerprint=fp,
            kind=sig.kind,
            target=sig.target,
            severity=sig.severity.value,
            details=sig.details,
        )
        events.append(incident_event(incident, "opened"))

    def _details(self, sig: Signal, template_id: int | None) -> dict[str, Any]:
        """A new incident's details: the signal's, its template and its monitor's service."""
        details = dict(sig.details)
        if template_id is not None:
            details["template_id"] = template_id
        if (service := self.correlation.service(sig.monitor_id)) is not None:
            details["service"] = service
        return details

    # -- passing checks -------------------------------------------------------------------------

    def _passed(self, session: Session, sig: Signal, events: list[IncidentEvent]) -> None:
        key = f"check:{sig.check_key}"
        check = self._check(session, key)
        if check.get("seen") and sig.observed_at < datetime.fromisoformat(check["seen"]):
            return  # observed before the check's last failure (a stream's late news): stale
        if check.get("last") == "firing":  # its related signals (if any) pass now
            self.correlation.passed(session, sig.check_key)
        ok_since = check.get("ok_since") or sig.observed_at.isoformat()
        self._checks[key] = {"failures": 0, "ok_since": ok_since, "last": "ok"}
        if check.get("seen"):
            self._checks[key]["seen"] = check["seen"]
        if redelivery.delivery(sig) is not None:  # which firing resolved (verify_alerts)
            self._checks[key]["delivery"] = redelivery.delivery(sig)
        if self.policy(sig.monitor_id).auto_resolve:
            self.passing.passed(session, sig, ok_since, events)

    def _ok_since(self, session: Session, sig: Signal) -> str:
        """Since when ``sig``'s check has passed."""
        check = self._check(session, f"check:{sig.check_key}")
        return str(check.get("ok_since") or sig.observed_at.isoformat())
