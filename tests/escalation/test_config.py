"""``escalation:`` and ``quiet_hours:``: the issue's example parses, a bad field is named, and
the quiet window (wrapping midnight, in its own time zone) starts and ends where it should."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from guard.config import Settings
from guard.config.escalation import QuietHours
from tests.escalation.helpers import NOTIFIERS

pytestmark = pytest.mark.unit

EXAMPLE = {
    "notifiers": NOTIFIERS,
    "escalation": {
        "remind_every": "15m",
        "steps": [
            {"after": "15m", "notify": ["pagerduty:primary"]},
            {"after": "45m", "notify": ["webhook:ops"]},
        ],
    },
    "quiet_hours": {
        "from": "22:00",
        "to": "08:00",
        "timezone": "Europe/Madrid",
        "below": "critical",
    },
}


def test_the_issue_example_parses() -> None:
    s = Settings(**EXAMPLE)  # type: ignore[arg-type]
    assert s.escalation.remind_every == 900
    assert [(st.after, st.notify) for st in s.escalation.steps] == [
        (900, ["pagerduty:primary"]),
        (2700, ["webhook:ops"]),
    ]
    assert s.escalation.active
    assert s.quiet_hours is not None
    assert (s.quiet_hours.from_, s.quiet_hours.to, s.quiet_hours.below) == (
        "22:00",
        "08:00",
        "critical",
    )
    assert not Settings().escalation.active and Settings().quiet_hours is None


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ({"quiet_hours": {"from": "25:00", "to": "08:00"}}, "quiet_hours.from"),
        ({"quiet_hours": {"from": "22:00", "to": "8h"}}, "quiet_hours.to"),
        (
            {"quiet_hours": {"from": "22:00", "to": "08:00", "timezone": "Mars/Olympus"}},
            "quiet_hours.timezone",
        ),
        ({"quiet_hours": {"from": "22:00", "to": "08:00", "below": "urgent"}}, "below"),
        ({"quiet_hours": {"from": "22:00", "to": "22:00"}}, "the same time"),
        ({"escalation": {"steps": [{"after": "soon", "notify": ["pagerduty:primary"]}]}}, "after"),
        (
            {"escalation": {"steps": [{"after": "5m", "notify": ["pagerduty"]}]}},
            "escalation.steps[].notify",
        ),
        (
            {
                "escalation": {
                    "steps": [
                        {"after": "45m", "notify": ["a:b"]},
                        {"after": "15m", "notify": ["a:b"]},
                    ]
                }
            },
            "must not decrease",
        ),
        ({"escalation": {"remind_every": "often"}}, "remind_every"),
        (
            {"escalation": {"steps": [{"after": "5m", "notify": ["pagerduty:secondary"]}]}},
            "escalation.steps[0].notify[0]: unknown notifier 'pagerduty:secondary'",
        ),
    ],
)
def test_a_bad_field_is_named(section: dict[str, object], named: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings(**section)  # type: ignore[arg-type]
    assert named in str(info.value)


def madrid(**kw: object) -> QuietHours:
    return QuietHours.model_validate(
        {"from": "22:00", "to": "08:00", "timezone": "Europe/Madrid", **kw}
    )


def test_a_window_wrapping_midnight_in_its_time_zone() -> None:
    q = madrid()  # Madrid is UTC+1 in December: 21:00-07:00 UTC
    morning = datetime(2026, 12, 6, 7, 0, tzinfo=UTC)
    assert q.window_end(datetime(2026, 12, 5, 20, 59, tzinfo=UTC)) is None  # 21:59 local
    assert q.window_end(datetime(2026, 12, 5, 21, 0, tzinfo=UTC)) == morning  # 22:00 local
    assert q.window_end(datetime(2026, 12, 5, 23, 30, tzinfo=UTC)) == morning  # before midnight
    assert q.window_end(datetime(2026, 12, 6, 2, 0, tzinfo=UTC)) == morning  # after midnight
    assert q.window_end(datetime(2026, 12, 6, 6, 59, tzinfo=UTC)) == morning
    assert q.window_end(datetime(2026, 12, 6, 7, 0, tzinfo=UTC)) is None  # 08:00 local: over
    assert q.window_end(datetime(2026, 12, 6, 12, 0, tzinfo=UTC)) is None
    # in July Madrid is UTC+2: the same local window is an hour earlier in UTC
    assert q.window_end(datetime(2026, 7, 1, 20, 30, tzinfo=UTC)) == datetime(
        2026, 7, 2, 6, 0, tzinfo=UTC
    )


def test_a_window_inside_one_day() -> None:
    q = QuietHours.model_validate({"from": "12:00", "to": "14:00"})  # UTC
    assert q.window_end(datetime(2026, 12, 5, 11, 59, tzinfo=UTC)) is None
    assert q.window_end(datetime(2026, 12, 5, 13, 0, tzinfo=UTC)) == datetime(
        2026, 12, 5, 14, 0, tzinfo=UTC
    )
    assert q.window_end(datetime(2026, 12, 5, 14, 0, tzinfo=UTC)) is None
