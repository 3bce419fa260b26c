"""Alertmanager's webhook (version 4) through the real web server: firing opens, a grouped
notification is many incidents, redelivery never doubles a count, resolved resolves; each answer
comes once the signals are stored, so the incidents are there when the 200 is."""

from __future__ import annotations

import pytest
import yaml

from guard.skills.library import SkillLibrary
from guard.triage import engine
from tests.conftest import GuardHome
from tests.helpers.intake import am_alert, am_payload, am_source, serving
from tests.skills.test_skills_files import SECTIONS


async def test_firing_opens_and_resolved_resolves(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        answer = await hook.post("am", am_payload(am_alert("InstanceDown", "api:9100")))
        assert answer.status_code == 200 and answer.json() == {"stored": 1}
        [incident] = hook.incidents()  # stored before the answer: no waiting
        assert (incident.source, incident.kind, incident.target) == (
            "alertmanager",
            "InstanceDown",
            "api:9100",
        )
        assert incident.severity == "critical" and incident.state == "open"
        assert incident.message == "InstanceDown on api:9100"
        assert incident.monitor_id == "intake:am"
        alert = incident.details["alert"]  # what verification by the source reads back
        assert incident.details["intake"] == "am"
        assert alert["labels"]["alertname"] == "InstanceDown" and alert["fingerprint"]
        resolved = am_alert("InstanceDown", "api:9100", status="resolved")
        assert (await hook.post("am", am_payload(resolved))).status_code == 200
        [incident] = hook.incidents()
        assert incident.state == "resolved"


async def test_a_grouped_notification_is_one_incident_per_alert(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        alerts = [
            am_alert("DiskFull", f"node-{i}:9100", severity="warning") for i in range(15)
        ]  # under the storm cap (20)
        answer = await hook.post("am", am_payload(*alerts))
        assert answer.json() == {"stored": 15}
        found = hook.incidents()
        assert sorted(i.target for i in found) == sorted(a["labels"]["instance"] for a in alerts)
        assert {i.severity for i in found} == {"warning"}
        # one alert of the group resolves, the others go on firing (re-sent with the group)
        alerts[3] = am_alert("DiskFull", "node-3:9100", status="resolved", severity="warning")
        assert (await hook.post("am", am_payload(*alerts))).status_code == 200
        states = {i.target: i.state for i in hook.incidents()}
        assert states.pop("node-3:9100") == "resolved"
        assert set(states.values()) == {"open"}
        assert all(i.count == 1 for i in hook.incidents())


async def test_two_alerts_on_one_target_resolve_apart(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        cpu, disk = am_alert("HighCPU", "db:9100"), am_alert("DiskFull", "db:9100")
        await hook.post("am", am_payload(cpu, disk))
        await hook.post("am", am_payload(am_alert("HighCPU", "db:9100", status="resolved")))
        assert {i.kind: i.state for i in hook.incidents()} == {
            "HighCPU": "resolved",
            "DiskFull": "open",
        }


async def test_a_redelivered_alert_never_doubles_the_count(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        payload = am_payload(am_alert("InstanceDown", "api:9100"))
        for _ in range(3):  # the sender's retries, then repeat_interval's re-sends
            assert (await hook.post("am", payload)).status_code == 200
        [incident] = hook.incidents()
        assert incident.count == 1
        # the same alert firing again after it ended is a new occurrence: it counts
        again = am_alert("InstanceDown", "api:9100", starts="2026-12-05T08:00:00Z")
        await hook.post("am", am_payload(again))
        await hook.post("am", am_payload(again))
        [incident] = hook.incidents()
        assert incident.count == 2
        # a late resolution of the first occurrence does not end the second
        late = am_alert("InstanceDown", "api:9100", status="resolved")
        await hook.post("am", am_payload(late))
        assert hook.incidents()[0].state == "open"


async def test_group_by_rule_folds_alerts_of_one_kind_and_target(home: GuardHome) -> None:
    async with serving(home, [am_source(group_by="rule")]) as hook:
        a = am_alert("HighLatency", "api", fingerprint="aaaa000000000001")
        b = am_alert("HighLatency", "api", fingerprint="aaaa000000000002")
        await hook.post("am", am_payload(a, b))
        [incident] = hook.incidents()
        assert incident.count == 2
        gone = {**a, "status": "resolved", "endsAt": "2026-12-05T07:10:00Z"}
        await hook.post("am", am_payload(gone, b))  # one resolves, the other fires on
        assert hook.incidents()[0].state == "open"
        await hook.post("am", am_payload(a))  # a late retry of the resolved one: stale
        gone_b = {**b, "status": "resolved", "endsAt": "2026-12-05T07:11:00Z"}
        await hook.post("am", am_payload(gone_b))  # the last one resolves: so does it
        [incident] = hook.incidents()
        assert (incident.state, incident.count) == ("resolved", 2)
        await hook.post("am", am_payload(b))  # a late retry after it all: not reopened
        assert hook.incidents()[0].state == "resolved"


async def test_group_by_template_folds_messages_that_differ_in_numbers(home: GuardHome) -> None:
    async with serving(home, [am_source(group_by="template")]) as hook:
        alerts = [am_alert("Disk", "db", fingerprint=f"dd{i:014d}") for i in range(3)]
        for i, alert in enumerate(alerts):
            alert["annotations"]["summary"] = f"disk {90 + i}% full on /dev/sd{i}"
        other = am_alert("Disk", "db", fingerprint="ee00000000000001")
        other["annotations"]["summary"] = "inode table corrupted"
        await hook.post("am", am_payload(*alerts, other))
        assert sorted(i.count for i in hook.incidents()) == [1, 3]


async def test_group_by_labels_folds_alerts_that_share_them(home: GuardHome) -> None:
    async with serving(home, [am_source(group_by=["severity"])]) as hook:
        page = [am_alert("Errors", "api", fingerprint=f"bb{i:014d}") for i in range(3)]
        warn = am_alert("Errors", "api", severity="warning", fingerprint="cc00000000000001")
        await hook.post("am", am_payload(*page, warn))
        found = sorted((i.severity, i.count) for i in hook.incidents())
        assert found == [("critical", 3), ("warning", 1)]


async def test_templates_map_labels_and_severity(home: GuardHome) -> None:
    source = am_source(
        kind="{{ labels.alertname | lower }}",
        target="{{ labels.job }}/{{ labels.instance }}",
        message="{{ annotations.description }} ({{ receiver }})",
    )
    async with serving(home, [source]) as hook:
        alert = am_alert("NodeDown", "n1", severity="page")
        unknown = am_alert("Odd", "n2", severity="whatever")
        await hook.post("am", am_payload(alert, unknown))
        found = {i.kind: i for i in hook.incidents()}
        assert found["nodedown"].target == "node/n1"
        assert found["nodedown"].message == "see the runbook (guard)"
        assert found["nodedown"].severity == "critical"
        assert found["odd"].severity == "error"  # default_severity


async def test_skills_trigger_on_intake_incidents_by_source_kind_and_target(
    home: GuardHome,
) -> None:
    skills = home.root / "skills"
    for name, trigger in {
        "restart-api-node": {"source": "alertmanager", "kind": "InstanceDown", "target": "api:*"},
        "grafana-only": {"source": "grafana", "kind": "InstanceDown"},
        "docker-only": {"source": "docker", "kind": "InstanceDown"},
    }.items():
        folder = skills / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Brings a node back when its alert fires.\n---\n"
            f"\n# {name}\n{SECTIONS}"
        )
        spec = {"triggers": [trigger], "steps": [{"run": "echo fix"}], "trust": "trusted"}
        (folder / "skill.yaml").write_text(yaml.safe_dump(spec))
    library = SkillLibrary(skills)
    assert library.quarantined == {}
    async with serving(home, [am_source()]) as hook:
        await hook.post("am", am_payload(am_alert("InstanceDown", "api:9100")))
        await hook.post("am", am_payload(am_alert("InstanceDown", "db:9100")))
        api, db = hook.incidents()
    assert [c.skill.name for c in library.candidates(api)] == ["restart-api-node"]
    assert library.candidates(db) == []  # the target glob does not match


async def test_memory_for_alerts_stays_bounded(
    home: GuardHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "CACHED_CHECKS", 5)  # every alert is a check of its own
    async with serving(home, [am_source()]) as hook:
        batches = [[am_alert("Down", f"n{b}-{i}") for i in range(4)] for b in range(3)]
        for alerts in batches:
            await hook.post("am", am_payload(*alerts))
        assert len(hook.guard.triage._written) == 4  # not 12: the cache was let go
        await hook.post("am", am_payload(*batches[0]))  # forgotten in memory, not in the store
        assert sorted(i.count for i in hook.incidents()) == [1] * 12
