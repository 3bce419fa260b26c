"""Verification by the source: an alert's remedy holds once the alert stops firing.

In process: the ``resolved`` notification, stored by triage, passes verification; a still-firing
alert fails it after ``verify_within``. Against a real Alertmanager: its API tells whether the
alert (by fingerprint) still fires.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlmodel import select

from guard.agent.verify import Verifier
from guard.agent.verify_alerts import SourceVerifier, fires_in, label_filter
from guard.config import TriageSettings
from guard.config.intake import IntakeSource
from guard.domain.records import Observation, Signal
from guard.incidents.lifecycle import transition
from guard.skills.model import VerifySpec
from guard.store.db import Database, open_database
from guard.store.models import Incident, IncidentState
from guard.triage import Triage
from tests.fakes import prometheus as prom_peers
from tests.helpers.intake import am_source

LABELS = {"alertname": "VictimDown", "instance": "10.0.0.7:9100", "job": "victim"}
FAST = VerifySpec(timeout=60, interval=0.05)


def source(**fields: Any) -> IntakeSource:
    return IntakeSource.model_validate(am_source(**fields))


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def _signal(status: str, fingerprint: str = "e23fc42ff8c9d4cc", starts: str = "T1") -> Signal:
    """One alert as the hook maps it: its check is the alert; its delivery, fingerprint@startsAt."""
    return Signal(
        monitor_id="intake:am",
        source="alertmanager",
        target=LABELS["instance"],
        kind="VictimDown",
        message=f"VictimDown {status}",
        status="ok" if status == "resolved" else "firing",
        details={
            "intake": "am",
            "alert": {"fingerprint": fingerprint, "labels": LABELS},
            "delivery": f"{fingerprint}@{starts}",
        },
        check=f"alert:{fingerprint}",
    )


def _remediating(db: Database, triage: Triage, fingerprint: str = "e23fc42ff8c9d4cc") -> Incident:
    """An alert-sourced incident opened by triage, which the agent is now remedying."""
    triage.process([Observation([_signal("firing", fingerprint)])])
    with db.session() as session:
        incident = session.exec(select(Incident)).one()
        transition(session, incident, IncidentState.diagnosing, actor="agent", reason="t")
        transition(session, incident, IncidentState.remediating, actor="agent", reason="t")
        session.refresh(incident)
        session.expunge(incident)
        return incident


@pytest.mark.unit
def test_the_resolved_notification_passes_verification(db: Database):
    triage = Triage(db, TriageSettings())
    incident = _remediating(db, triage)
    verifier = SourceVerifier(db, [source(verify_within=0.3)])
    passed, reason, _ = asyncio.run(verifier.verify(incident, FAST))
    assert not passed and "still firing after 0.3s" in reason

    triage.process([Observation([_signal("resolved")])])
    passed, reason, attempts = asyncio.run(verifier.verify(incident, FAST))
    assert passed and attempts == 1 and "alertmanager sent the alert resolved" in reason
    with db.session() as session:  # triage left it to the agent: verification closes it
        assert session.exec(select(Incident)).one().state == IncidentState.remediating

    triage.process([Observation([_signal("firing", starts="T2")])])  # it fires again
    passed, _, _ = asyncio.run(verifier.verify(incident, FAST))
    assert not passed
    triage.process([Observation([_signal("resolved")])])  # a late retry of T1's resolution
    passed, _, _ = asyncio.run(verifier.verify(incident, FAST))
    assert not passed
    triage.process([Observation([_signal("resolved", starts="T2")])])
    passed, _, _ = asyncio.run(verifier.verify(incident, FAST))
    assert passed


@pytest.mark.unit
def test_another_alerts_resolution_does_not_verify(db: Database):
    triage = Triage(db, TriageSettings())
    incident = _remediating(db, triage)
    triage.process([Observation([_signal("resolved", fingerprint="0000000000000000")])])
    verifier = SourceVerifier(db, [source(verify_within=0.2)])
    passed, reason, _ = asyncio.run(verifier.verify(incident, FAST))
    assert not passed and "no resolved alert from intake:am yet" in reason


@pytest.mark.unit
def test_verify_within_is_a_duration_named_when_wrong():
    assert source().verify_within == 300.0  # 5 minutes unless the source says
    assert source(verify_within="2m").verify_within == 120.0
    with pytest.raises(ValidationError, match="verify_within"):
        source(verify_within="soon")


@pytest.mark.unit
def test_the_verifier_hands_an_alert_incident_to_its_source(db: Database):
    incident = _remediating(db, Triage(db, TriageSettings()))
    # no monitor and no settings: the source verifies (within the default 5 minutes)
    Triage(db, TriageSettings()).process([Observation([_signal("resolved")])])
    verdict = asyncio.run(Verifier(db, {}, None).verify(incident, VerifySpec(interval=0.05)))
    assert verdict.passed and "sent the alert resolved" in verdict.reason


@pytest.mark.unit
def test_alertmanager_filters_and_fingerprints():
    assert label_filter({"job": 'a"b', "alertname": "X"}) == ['alertname="X"', 'job="a\\"b"']
    assert label_filter({"alertname": "X", "dsn": "pg://u:[REDACTED:password]@db"}) == [
        'alertname="X"'
    ]  # a value stored redacted is not the alert's: it selects nothing
    alerts = [{"fingerprint": "aa", "status": {"state": "suppressed"}}]
    assert fires_in(alerts, "aa") and not fires_in(alerts, "bb")


def _post_alert(am: prom_peers.Peer, ends: datetime) -> None:
    alert = {
        "labels": LABELS,
        "annotations": {"summary": "down"},
        "startsAt": (datetime.now(UTC) - timedelta(minutes=1)).isoformat(),
        "endsAt": ends.isoformat(),
    }
    httpx.post(am.url + "/api/v2/alerts", json=[alert], timeout=10).raise_for_status()


def test_a_real_alertmanager_says_whether_the_alert_still_fires(db: Database, tmp_path: Path):
    with prom_peers.alertmanager(tmp_path / "am", "http://127.0.0.1:9/hooks/am", "t") as am:
        _post_alert(am, datetime.now(UTC) + timedelta(hours=1))
        listed = prom_peers.active_alerts(am, "VictimDown")
        assert len(listed) == 1
        fingerprint = listed[0]["fingerprint"]
        incident = _remediating(db, Triage(db, TriageSettings()), fingerprint)
        # 2 s: room for several asks even when one takes half a second on a loaded machine
        verifier = SourceVerifier(db, [source(alertmanager_url=am.url, verify_within=2.0)])
        passed, reason, attempts = asyncio.run(verifier.verify(incident, FAST))
        assert not passed and attempts > 1
        assert f"Alertmanager still lists alert {fingerprint} as firing" in reason

        _post_alert(am, datetime.now(UTC) - timedelta(seconds=1))  # Prometheus's resolution
        passed, reason, _ = asyncio.run(verifier.verify(incident, FAST))
        assert passed, reason
        assert f"Alertmanager no longer lists alert {fingerprint} as firing" in reason

        wrong = SourceVerifier(db, [source(alertmanager_url=am.url + "/nope", verify_within=0.1)])
        passed, reason, _ = asyncio.run(wrong.verify(incident, FAST))
        assert not passed and "Alertmanager answered 404" in reason

    # Alertmanager gone: not verified, and the reason says why
    passed, reason, _ = asyncio.run(verifier.verify(incident, FAST))
    assert not passed and "Alertmanager did not answer: ConnectError" in reason
