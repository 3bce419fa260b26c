"""A fast subset of the crash matrix (``python -m bench.crash`` runs all of it): a real
``guard run`` is SIGKILLed at a crash point, restarted, and nothing is lost, repeated or left
half done. Each case takes 20-40 s (two Guard starts; more on a loaded machine); no Docker
needed."""

from __future__ import annotations

import pytest

from bench.crash import Result, run_case, scenarios
from tests.fakes.postgres import fresh_database

FAST = [
    # regression: a resumed skill run whose verify failed left the incident remediating forever
    ("http-skill", "step.started"),
    ("http-skill", "step.ended"),  # the remedy ran, its step not yet followed by verify
    ("http-skill", "verify.before_state"),  # verified, the incident not yet resolved
    # regression: a run that ended before the incident was settled left it remediating forever
    ("http-skill", "incident.resolving"),
    ("telegram-fix", "command.queued"),  # a Telegram reply queued, not yet taken
    # regression: a message Telegram took before Guard stored its id was posted again
    ("telegram-fix", "outbox.sent_before_id"),
    # regression: a second answer after a fix that did not cure was not sent (harness), and
    # its acknowledgement repeated the first one's text
    ("telegram-fix", "step.started"),
    # regression: a reply delivered again after the crash was handled twice (intermittent)
    ("telegram-fix", "learning.files_written"),
    ("logfile", "logfile.cursor_save:2"),  # a log position read, not stored
    # regression: a crash between queueing the report and queueing its chart lost the chart
    ("report", "report.sending"),
    # regression: the report's text, sent but not marked sent, was posted again
    ("report", "report.sent_before_mark"),
    # a storm being folded (its first signal, so the storm incident itself is not committed)
    ("storm", "triage.storm_fold"),
    # an escalation step's pages and its record: both or neither, then once
    ("escalation", "escalation.step_recorded"),
    ("escalation", "escalation.step_committed"),  # recorded, its page not yet delivered
    ("escalation", "escalation.reminder_recorded"),
]


def assert_green(result: Result) -> None:
    assert result.crashed, result.error
    assert not result.error, result.error
    red = {name: why for name, (ok, why) in result.checks.items() if ok is False}
    assert not red, red


@pytest.mark.parametrize(("scenario", "point"), FAST, ids=[f"{s}-{p}" for s, p in FAST])
def test_a_kill_at_the_point_loses_nothing_and_repeats_nothing(scenario, point):
    assert_green(run_case(scenarios()[scenario], point))


def test_on_postgres_a_kill_mid_storm_loses_nothing(postgres_url):
    """``python -m bench.crash --database postgres``, one case: a kill inside a storm batch."""
    db = fresh_database(postgres_url)
    assert_green(run_case(scenarios()["storm"], "triage.storm_fold:6", database_url=db))
