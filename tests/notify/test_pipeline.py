"""``build_pipeline`` assembles the whole notification pipeline once: the router, the fan-out over
the configured channels and pagers, quiet hours around it, the runners, the page worker and the
leader's jobs (escalation, the release of held questions, promotions put to an admin). A Guard
asks through it."""

from __future__ import annotations

import pytest

from guard.app import Guard
from guard.notify.fanout import FanOut
from guard.notify.pagers.notifier import PagerNotifier
from guard.notify.pipeline import build_pipeline
from guard.notify.quiet import QuietNotifier
from guard.store.db import open_database
from tests.conftest import GuardHome
from tests.helpers.telegram import CHAT, TOKEN

KEY = "0123456789abcdef0123456789abcdef"
CONFIG = {
    "telegram": {"bot_token": TOKEN, "chat_id": CHAT},
    "notifiers": {"pagerduty": {"primary": {"routing_key": KEY}}},
    "routes": [{"match": {"severity": "critical"}, "notify": ["pagerduty:primary"]}],
    "quiet_hours": {"from": "22:00", "to": "08:00", "timezone": "UTC", "below": "critical"},
    "escalation": {"steps": [{"after": "5m", "notify": ["pagerduty:primary"]}]},
}


@pytest.mark.unit
def test_one_function_assembles_fanout_routing_quiet_hours_pagers_runners_and_jobs(
    home: GuardHome,
) -> None:
    home.write_config(CONFIG)
    settings = home.settings()
    pipeline = build_pipeline(settings, open_database(settings.database_url))
    assert isinstance(pipeline.notifier, FanOut)
    kinds = {type(n).__name__ for n in pipeline.notifier.notifiers}
    assert kinds == {"TelegramNotifier", PagerNotifier.__name__}
    assert isinstance(pipeline.quiet, QuietNotifier) and pipeline.asking is pipeline.quiet
    assert pipeline.quiet.inner is pipeline.notifier
    assert [type(r).__name__ for r in pipeline.runners(None)] == ["TelegramGateway"]
    assert pipeline.page_worker() is not None
    jobs = pipeline.jobs()
    assert set(jobs) == {"escalation:tick", "quiet:release", "skills:promotion"}
    assert all(e for _, e in jobs.values())  # skills:promotion: no git remote here


@pytest.mark.unit
def test_a_guard_asks_through_its_pipeline(home: GuardHome) -> None:
    home.write_config(CONFIG)
    guard = Guard(home.settings(), [])
    assert guard.agent.notifier is guard.pipeline.asking is guard.quiet
    assert guard.pipeline.router.playbook_of("nothing") is None  # the agent's books, kept
