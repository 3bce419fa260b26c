"""Verification by the source: a remedy for an alert worked once the alert stops firing.

An incident that an ``intake:`` source opened (``source`` alertmanager, grafana or webhook) has
no check Guard could re-run; the system that sent the alert tells instead:

- its ``resolved`` notification for the alert's latest firing arrived: triage stores it as the
  alert's check's last signal (``ok``, with its delivery key), so it is read from the store;
- for Alertmanager with ``alertmanager_url``: its API (``GET /api/v2/alerts``) no longer lists
  the alert's fingerprint (Alertmanager drops an alert from that list once it resolved).

Both are polled, backing off from the verify step's ``interval``, until the source's
``verify_within`` (default 5 minutes) runs out.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol, get_args

from guard.config.intake import IntakeSource, IntakeType
from guard.harness.crashpoints import reached
from guard.redact import PLACEHOLDER
from guard.skills.model import VerifySpec
from guard.store.db import Database
from guard.store.models import Incident
from guard.store.state import get_state
from guard.triage.redelivery import DELIVERIES

DEFAULT_WITHIN = 300.0  # seconds: ``verify_within`` when the source does not say
MAX_INTERVAL = 10.0  # seconds: the longest pause between two looks


def fires_in(alerts: Iterable[dict[str, Any]], fingerprint: str) -> bool:
    """Whether Alertmanager's alert list (API v2) still holds the alert ``fingerprint``.

    The list holds only unresolved alerts; ``suppressed`` (silenced, inhibited) still fire."""
    return any(a.get("fingerprint") == fingerprint for a in alerts)


def label_filter(labels: dict[str, Any]) -> list[str]:
    """Alertmanager ``filter`` matchers selecting the alert by its labels (``name="value"``).

    A label Guard stored redacted is left out: its stored value is not the alert's."""
    return [
        f"{k}={json.dumps(str(v))}"
        for k, v in sorted(labels.items())
        if PLACEHOLDER.search(str(v)) is None
    ]


class SourceVerifier:
    """Asks the source whether the alert behind an incident still fires."""

    def __init__(self, db: Database, sources: Iterable[IntakeSource]) -> None:
        self.db = db
        self.sources = {s.id: s for s in sources}

    async def verify(self, incident: Any, spec: VerifySpec) -> tuple[bool, str, int]:
        """(passed, reason, attempts) for ``incident``, polling until ``verify_within``."""
        details = incident.details or {}
        source = self.sources.get(str(details.get("intake") or incident.monitor_id))
        within = source.verify_within if source is not None else DEFAULT_WITHIN
        url = source.alertmanager_url if source is not None else None
        deadline = time.monotonic() + within
        attempts, pause, reason = 0, max(spec.interval, 0.2), "not checked"
        while True:
            attempts += 1
            passed, reason = await self._once(incident, url, deadline)
            reached("verify.during")
            if passed:
                return True, reason, attempts
            if time.monotonic() + pause > deadline:
                return False, f"still firing after {within:g}s: {reason}", attempts
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_INTERVAL)

    async def _once(self, incident: Any, url: str | None, deadline: float) -> tuple[bool, str]:
        if await asyncio.to_thread(self._resolved_arrived, incident):
            return True, f"{incident.source} sent the alert resolved"
        alert = (incident.details or {}).get("alert") or {}
        fingerprint = alert.get("fingerprint")
        if not url or not fingerprint or PLACEHOLDER.search(str(fingerprint)):
            return False, f"no resolved alert from {incident.monitor_id} yet"
        wait = max(1.0, min(10.0, deadline - time.monotonic()))
        import httpx  # here: a guard run that verifies no Alertmanager alert never loads it

        try:
            firing = await self._asks(url, str(fingerprint), alert.get("labels") or {}, wait)
        except httpx.HTTPStatusError as exc:  # its text holds the URL: say only the status
            return False, f"Alertmanager answered {exc.response.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            return False, f"Alertmanager did not answer: {type(exc).__name__}: {exc}"
        if not firing:
            return True, f"Alertmanager no longer lists alert {fingerprint} as firing"
        return False, f"Alertmanager still lists alert {fingerprint} as firing"

    def _resolved_arrived(self, incident: Any) -> bool:
        """Whether the check's last signal is the resolution of the incident's latest firing
        (a late resolution of an earlier firing of the same alert is not)."""
        with self.db.session() as session:
            check = get_state(session, f"check:{incident.check_key}")
            fresh = session.get(Incident, incident.id)
            counted = (fresh.details if fresh is not None else {}).get(DELIVERIES) or [None]
        return check.get("last") == "ok" and check.get("delivery") in (None, counted[-1])

    @staticmethod
    async def _asks(url: str, fingerprint: str, labels: dict[str, Any], wait: float) -> bool:
        import httpx

        params = {"filter": label_filter(labels)}
        async with httpx.AsyncClient(timeout=wait) as client:
            response = await client.get(url.rstrip("/") + "/api/v2/alerts", params=params)
            response.raise_for_status()
            alerts = response.json()
        if not isinstance(alerts, list):
            raise ValueError("GET /api/v2/alerts did not answer a list")
        return fires_in(alerts, fingerprint)


class SourceVerification(Protocol):
    """Verifies an incident an intake source opened: (passed, reason, attempts)."""

    async def verify(self, incident: Any, spec: VerifySpec) -> tuple[bool, str, int]: ...


# How each intake source's incidents are verified, by their ``source`` (the intake ``type``):
# every alert source verifies by the alert's state. A new intake type is verified this way
# unless an entry here says otherwise.
SOURCE_VERIFIERS: dict[str, Callable[[Database, Iterable[IntakeSource]], SourceVerification]] = {
    name: SourceVerifier for name in get_args(IntakeType)
}
ALERT_SOURCES = frozenset(SOURCE_VERIFIERS)
