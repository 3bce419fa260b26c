"""A real ``guard run`` with Slack configured against the local Slack and a real Docker engine:
a container's fault is announced in the channel (Block Kit, a button per remedy), a viewer's
press is refused, an approver's press over Socket Mode runs the remedy, the container is healed,
the question's buttons go (``chat.update``) and the outcome is posted in its thread; the tokens
never reach the log. With only Slack configured, the daily report is posted in the channel at
``report.cron``'s time, as on every chat channel."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, CHANNEL, SlackServer
from tests.helpers.agent import (
    incidents,
    running_guard,
    setup_docker_home,
    show,
    tune_skill,
    wait_for,
)
from tests.helpers.slack import buttons, slack_settings

pytestmark = pytest.mark.docker

APPROVER, VIEWER = "U0APPROVER", "U0VIEWER"


def ephemeral(slack: SlackServer, user: str) -> list[str]:
    calls = slack.sent("chat.postEphemeral")
    return [str(c["params"]["text"]) for c in calls if c["params"]["user"] == user]


@pytest.mark.timeout(240)
def test_a_docker_fault_is_approved_by_a_press_over_socket_mode_and_healed(
    home: GuardHome, slack: SlackServer, containers: Any
) -> None:
    labels = setup_docker_home(
        home,
        skills=["docker-start-exited"],
        slack=slack_settings(slack),
        access={"slack": {APPROVER: "approver", VIEWER: "viewer"}},
    )
    tune_skill(
        home,
        "docker-start-exited",
        trust="approval",
        steps=[
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"verify": {"timeout": "20s", "interval": "500ms"}},
        ],
    )
    api = containers.run(
        "api", "sleep 600", labels={"guard.test.watch": labels["guard.test.watch"]}
    )
    with running_guard(home) as (_, log):
        time.sleep(0.5)  # the Docker events stream is attached
        wait_for(slack.connected, 30, "Guard's Socket Mode connection")
        api.kill()
        inc = wait_for(
            lambda: next((i for i in incidents(home) if i["state"] == "awaiting_human"), None),
            60,
            "the fault to wait for a human",
        )
        asked = wait_for(
            lambda: next(
                (m for m in slack.bot_messages(f"Incident #{inc['id']}") if buttons(m)), None
            ),
            30,
            "the question in the channel",
        )
        run = next(v for label, v in buttons(asked).items() if "docker-start-exited" in label)
        viewer = slack.push("interactive", slack.press(VIEWER, run, ts=asked["ts"]))
        wait_for(lambda: viewer in slack.acked, 15, "the viewer's press acked")
        assert show(home, inc["id"])["state"] == "awaiting_human"
        slack.push("interactive", slack.press(APPROVER, run, ts=asked["ts"]))
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 90, "the remedy to heal")
        closed = wait_for(
            lambda: asked if not buttons(slack.messages[(CHANNEL, asked["ts"])]) else None,
            30,
            "the question's buttons to go",
        )
        outcome = wait_for(
            lambda: [m for m in slack.bot_messages() if m.get("thread_ts") == closed["ts"]],
            30,
            "the outcome in the question's thread",
        )
    api.reload()
    assert api.status == "running"
    assert ephemeral(slack, VIEWER) and ephemeral(slack, VIEWER)[0].startswith("Refused")
    assert ephemeral(slack, APPROVER), slack.sent("chat.postEphemeral")
    assert "Resolved" in outcome[0]["text"]
    assert all(c["token"] == BOT_TOKEN for c in slack.sent())  # never the app-level token
    written = log.read_text()
    assert "slack connected as guard (socket)" in written
    assert BOT_TOKEN not in written and APP_TOKEN not in written


def next_minute(margin: float = 20.0) -> datetime:
    """The first whole minute (UTC) at least ``margin`` seconds away."""
    now = datetime.now(UTC)
    return (now + timedelta(seconds=margin + 60)).replace(second=0, microsecond=0)


@pytest.mark.timeout(180)
def test_the_daily_report_is_posted_on_slack_at_its_scheduled_time(
    home: GuardHome, slack: SlackServer
) -> None:
    at = next_minute()
    setup_docker_home(
        home,
        slack={
            "bot_token": BOT_TOKEN,
            "app_token": APP_TOKEN,
            "channel": CHANNEL,
            "api_base_url": slack.url,
        },
        report={"cron": f"{at.minute} {at.hour} * * *", "timezone": "UTC"},
    )
    with running_guard(home):
        wait_for(slack.connected, 30, "Guard's Socket Mode connection")
        assert not slack.bot_messages("Guard daily report")  # not before its time
        (report,) = wait_for(
            lambda: slack.bot_messages("Guard daily report"),
            (at - datetime.now(UTC)).total_seconds() + 30,
            "the daily report at its scheduled time",
        )
        seen = datetime.now(UTC)
    assert at <= seen < at + timedelta(seconds=30), (at, seen)
    assert report["channel"] == CHANNEL and "thread_ts" not in report
    assert "Incidents opened: 0" in report["text"], report["text"]
