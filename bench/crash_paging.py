"""``bench.crash``'s paging scenario: a critical incident's route pages a local PagerDuty
Events API v2 server and a webhook receiver that verifies Guard's signature; Guard is killed
while paging. The check: every page delivered, each acted on once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.crash_checks import (
    audit_check,
    stuck_check,
    telegram_check,
    telegram_config,
    web_playbook,
)
from bench.crash_run import Check, Run, Scenario
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.webhook_receiver import SECRET, WebhookReceiver


@dataclass
class Pagers:
    pd: PagerDutyServer = field(default_factory=lambda: PagerDutyServer().start())
    hook: WebhookReceiver = field(default_factory=lambda: WebhookReceiver().start())

    def config(self) -> dict[str, Any]:
        """``notifiers:`` and ``routes:``: a critical incident pages both."""
        return {
            "notifiers": {
                "pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": self.pd.url}},
                "webhook": {"ops": {"url": self.hook.url, "hmac_secret": SECRET}},
            },
            "routes": [
                {"match": {"severity": "critical"}, "notify": ["pagerduty:primary", "webhook:ops"]}
            ],
        }

    def stop(self) -> None:
        self.pd.stop()
        self.hook.stop()

    def triggered(self) -> bool:
        return any(e["event_action"] == "trigger" for e in self.pd.events)

    def finished(self) -> bool:
        """Both pagers have the trigger and the resolve."""
        actions = {b["action"] for b in self.hook.processed.values()}
        resolved = any(e["event_action"] == "resolve" for e in self.pd.events)
        return resolved and actions == {"trigger", "resolve"}

    def check(self, unsent: int) -> Check:
        """One PagerDuty alert (however many times an event was repeated) opened and resolved,
        the webhook acting once per page, and no page left unsent."""
        alerts = [(a["dedup_key"], a["state"]) for a in self.pd.alerts]
        processed = sorted(b["action"] for b in self.hook.processed.values())
        repeats = sum(1 for r in self.hook.requests if r.get("repeat"))
        ok = (
            len(alerts) == 1
            and alerts[0][1] == "resolved"
            and processed == ["resolve", "trigger"]
            and unsent == 0
        )
        return ok, (
            f"PagerDuty alerts {alerts} from {len(self.pd.events)} event(s); webhook acted on "
            f"{processed} ({repeats} repeat(s) dropped); {unsent} page(s) unsent"
        )


class Paging(Scenario):
    name = "paging"
    what = (
        "a critical HTTP check fails, no skill: Guard asks, and its route pages PagerDuty and a "
        "signed webhook; the service recovers, the incident auto-resolves, both get a resolve"
    )
    points = (
        "page.claimed",
        "page.sent_before_mark",  # the first page (a trigger) taken, not marked sent
        "page.sent_before_mark:3",  # a resolve taken, not marked sent
    )

    def setup(self, run: Run) -> None:
        run.notes["pagers"] = pagers = Pagers()
        web_playbook(run, auto_resolve=True)
        (run.home.root / "skills").mkdir()
        run.home.write_config(telegram_config(run, **pagers.config()))

    def drive(self, run: Run) -> None:
        if run.notes["pagers"].triggered():
            run.service.healthy = True  # it recovers: the incident auto-resolves

    def teardown(self, run: Run) -> None:
        run.notes["pagers"].stop()

    def done(self, run: Run) -> bool:
        resolved = any(i["state"] == "resolved" for i in run.incidents())
        return resolved and run.notes["pagers"].finished()

    def checks(self, run: Run) -> dict[str, Check]:
        unsent = run.db("select count(*) from page_outbox where status != 'sent'")[0][0]
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "telegram": telegram_check(run),
            "pages": run.notes["pagers"].check(unsent),
            "audit": audit_check(run),
        }
