"""The paging scenario's servers and check for ``bench.crash``: a local PagerDuty Events API v2
server and a webhook receiver that verifies Guard's signature, and what "every page delivered,
acted on once" means for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.pagerduty_server import ROUTING_KEY, PagerDutyServer
from tests.webhook_receiver import SECRET, WebhookReceiver

Check = tuple[bool | None, str]


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
