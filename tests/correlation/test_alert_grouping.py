"""The default grouping of an alert-style log rule: one incident per rule and target (issue #40
item 2), however many wordings its lines come in; a catch-all rule keeps one per template."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.config import TriageSettings
from guard.store.db import open_database
from guard.triage import Triage
from tests.triage.test_grouping import _incidents, _monitor, _scan

pytestmark = pytest.mark.unit

TWO_WORDINGS = (
    "2026-12-03T10:00:01Z ERROR could not write /var/lib/app/q.db: No space left on device\n"
    "2026-12-03T10:00:02Z ERROR disk /var/lib/app full, dropping the upload of order 7\n"
    "2026-12-03T10:00:03Z ERROR could not write /var/lib/app/r.db: No space left on device\n"
)


@pytest.fixture
def db(tmp_path: Path):
    database = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    yield database
    database.dispose()


def test_a_full_disk_logged_in_two_wordings_is_one_incident(tmp_path: Path, db) -> None:
    log = tmp_path / "app.log"
    log.write_text(TWO_WORDINGS)
    monitor = _monitor(log, kind="disk_full", pattern="No space left on device|disk .* full")
    _scan(monitor, Triage(db, TriageSettings()), {})
    (incident,) = _incidents(db)
    assert incident.kind == "disk_full" and incident.count == 3
    assert incident.details["template_id"]  # the first wording's template is still shown


def test_a_catch_all_rule_keeps_one_incident_per_event_template(tmp_path: Path, db) -> None:
    log = tmp_path / "app.log"
    log.write_text(TWO_WORDINGS)
    _scan(_monitor(log), Triage(db, TriageSettings()), {})  # pattern ERROR: a catch-all
    assert [i.count for i in _incidents(db)] == [2, 1]


def test_group_by_template_stays_available_on_an_alert_style_rule(tmp_path: Path, db) -> None:
    log = tmp_path / "app.log"
    log.write_text(TWO_WORDINGS)
    pattern = "No space left on device|disk .* full"
    _scan(_monitor(log, pattern=pattern, group_by="template"), Triage(db, TriageSettings()), {})
    assert [i.count for i in _incidents(db)] == [2, 1]


@pytest.mark.parametrize(
    ("pattern", "catches_all"),
    [
        (".", True),
        (r"\bERROR\b", True),
        ("(?i)error|exception|traceback|panic", True),
        ("Error|Traceback", True),
        ("No space left on device", False),
        ("too many clients", False),
        (r"request failed: 502", False),
        (r"ERROR (?P<service>\w+) timed out", False),
    ],
)
def test_which_rules_are_catch_alls(pattern: str, catches_all: bool) -> None:
    from guard.grouping.rules import catch_all

    assert catch_all(pattern) is catches_all
