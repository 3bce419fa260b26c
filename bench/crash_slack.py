"""``bench.crash``'s Slack scenario: Guard asks in a Slack channel (the local Slack of
``tests/fakes/slack.py``: the Web API and Socket Mode), the daily report is queued (``guard
report daily``), the service recovers, and the question is closed (``chat.update``); Guard is
killed after Slack took a post or an edit, before Guard recorded it. The check (``posts``):
every outbox row was sent, and Slack received each post once."""

from __future__ import annotations

from typing import Any

from bench.crash_checks import audit_check, posts_check, stuck_check, telegram_config, web_playbook
from bench.crash_run import Check, Run, Scenario
from tests.fakes.slack import SlackServer
from tests.helpers.slack import slack_settings

# Guard is killed after the server took it, before Guard recorded it:
CHAT_POINTS = (
    "outbox.sent_before_id",  # the question
    "report.sent_before_mark",  # the daily report
    "outbox.edited_before_mark",  # the question's closing edit
)


class ChatScenario(Scenario):
    """A chat channel alone: an HTTP check fails with no skill, Guard asks; ``guard report
    daily``; the service recovers, the incident auto-resolves and the question is closed.
    Each channel says how it is configured and what its server received."""

    channel = ""
    points: tuple[str, ...] = CHAT_POINTS

    def configure(self, run: Run) -> dict[str, Any]:
        raise NotImplementedError

    def received(self, run: Run, row: dict[str, Any]) -> int:
        """How many posts with the content of outbox ``row`` the server took."""
        raise NotImplementedError

    def asked(self, run: Run) -> bool:
        raise NotImplementedError

    def reported(self, run: Run) -> bool:
        raise NotImplementedError

    def closed(self, run: Run) -> bool:
        """The question was edited to say it is over."""
        raise NotImplementedError

    def setup(self, run: Run) -> None:
        web_playbook(run, auto_resolve=True)
        (run.home.root / "skills").mkdir()
        config = telegram_config(run, **{self.channel: self.configure(run)})
        del config["telegram"]  # the channel alone: every crash point is one of its posts
        run.home.write_config(config)

    def drive(self, run: Run) -> None:
        if self.asked(run) and not run.notes.get("reported"):
            run.home.cli("report", "daily")
            run.notes["reported"] = True
        if self.reported(run):
            run.service.healthy = True  # it recovers: the incident auto-resolves

    def done(self, run: Run) -> bool:
        resolved = any(i["state"] == "resolved" for i in run.incidents())
        return resolved and self.closed(run)

    def checks(self, run: Run) -> dict[str, Check]:
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "posts": posts_check(run, self.channel, lambda row: self.received(run, row)),
            "audit": audit_check(run),
        }


class Slack(ChatScenario):
    name = "slack"
    channel = "slack"
    what = (
        "a critical HTTP check fails, no skill: Guard asks in a Slack channel (the local Slack: "
        "Web API and Socket Mode); `guard report daily` queues the report; the service "
        "recovers, the incident auto-resolves and the question is closed (`chat.update`)"
    )

    def configure(self, run: Run) -> dict[str, Any]:
        run.notes["slack"] = slack = SlackServer().start()
        return slack_settings(slack)

    def teardown(self, run: Run) -> None:
        run.notes["slack"].stop()

    def received(self, run: Run, row: dict[str, Any]) -> int:
        slack: SlackServer = run.notes["slack"]
        return sum(
            c["params"].get("channel") == row["chat_id"] and c["params"].get("text") == row["text"]
            for c in slack.sent("chat.postMessage")
        )

    def _questions(self, run: Run) -> list[dict[str, Any]]:
        slack: SlackServer = run.notes["slack"]
        return [m for m in slack.bot_messages("Incident #") if "thread_ts" not in m]

    def asked(self, run: Run) -> bool:
        return bool(self._questions(run))

    def reported(self, run: Run) -> bool:
        return bool(run.notes["slack"].bot_messages("Incidents opened"))

    def closed(self, run: Run) -> bool:
        return any(q.get("edited") for q in self._questions(run))
