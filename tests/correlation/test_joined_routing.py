"""A joined signal is never quieter than it would have been alone (security review #39, items 3
and 4), on a real ``guard run`` against a local HTTP service, a real log file, the local
PagerDuty Events API server and the webhook receiver.

Service ``shop`` is watched by its app's log (a client's bad input is a ``warning``) and by its
HTTP check (``critical``). Routes: critical pages PagerDuty, warning pages the webhook.

- Item 3: the warning log incident is open and asked (the webhook paged); the HTTP check then
  fails and joins it: PagerDuty gets one trigger, and only one however many signals join.
- Item 4: a muted, or resolved, incident of ``shop`` takes no signal of another monitor: that
  monitor's critical signal opens its own incident, which is asked and pages PagerDuty.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from guard.incidents.commands import queue_command
from guard.notify.pagers import dedup_key
from tests.conftest import GuardHome
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.pagerduty import running as pagerduty
from tests.fakes.webhook_receiver import SECRET, WebhookReceiver, receiving
from tests.helpers.agent import as_cli, find, running_guard, show, wait_for
from tests.helpers.telegram import Service

BAD_INPUT = "WARN request rejected: invalid input from client 10.0.0.{n}\n"
PAYMENT = "ERROR payment provider timed out for order {n}\n"


@dataclass
class Shop:
    """Guard's home watching ``shop``, its service, its log and the two pagers."""

    home: GuardHome
    service: Service
    log: Path
    pd: PagerDutyServer
    hook: WebhookReceiver

    def write(self, line: str) -> None:
        with open(self.log, "a") as f:
            f.write(line)

    def related(self, incident_id: int) -> list[str]:
        """The monitors of the incident's related signals."""
        return [r["monitor"] for r in show(self.home, incident_id)["related"]]

    def watch(self, *, http_resolves: bool = False) -> None:
        """The playbook: ``shop`` watched by its log and its HTTP check."""
        self.home.playbook(
            "shop",
            [
                {
                    "id": "shop-log",
                    "type": "logfile",
                    "service": "shop",
                    "path": str(self.log),
                    "every": "1s",
                    "rules": [
                        {"kind": "bad_input", "pattern": "invalid input", "severity": "warning"},
                        {
                            "kind": "payment_timeout",
                            "pattern": "payment provider timed out",
                            "severity": "critical",
                        },
                    ],
                },
                {
                    "id": "shop-http",
                    "type": "http",
                    "service": "shop",
                    "url": f"{self.service.base}/healthz",
                    "every": "1s",
                    "auto_resolve": http_resolves,
                },
            ],
        )


@pytest.fixture
def shop(home: GuardHome, service: Service) -> Iterator[Shop]:
    """Guard watching ``shop`` two ways, routed by severity: critical pages PagerDuty,
    warning the webhook; no remedy is known, so Guard asks."""
    with pagerduty() as pd, receiving() as hook:
        home.write_config(
            {
                "http_host": "127.0.0.1",
                "http_port": 0,
                "sandbox": {"backend": "local"},
                "agent": {"poll_interval": "200ms"},
                "notifiers": {
                    "pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}},
                    "webhook": {"ops": {"url": hook.url, "hmac_secret": SECRET}},
                },
                "routes": [
                    {"match": {"severity": "critical"}, "notify": ["pagerduty:primary"]},
                    {"match": {"severity": "warning"}, "notify": ["webhook:ops"]},
                ],
            }
        )
        (home.root / "skills").mkdir()
        service.healthy = True
        found = Shop(home, service, home.root / "shop.log", pd, hook)
        found.log.write_text("")
        found.watch()
        yield found


@contextmanager
def warning_asked(shop: Shop) -> Iterator[tuple[Path, int]]:
    """``guard run`` with the log's warning incident open and asked: its output, the incident."""
    with running_guard(shop.home) as (_, out):
        shop.write(BAD_INPUT.format(n=1))
        inc = wait_for(
            lambda: find(shop.home, state="awaiting_human", kind="bad_input"), 60, "the warning"
        )
        yield out, int(inc["id"])


def opens_its_own(shop: Shop, out: Path, kind: str, ended: int) -> None:
    """The critical signal of ``kind`` opens its own incident, which is asked (the console's
    question) and pages PagerDuty; the ``ended`` incident takes nothing."""
    inc: dict[str, Any] = wait_for(
        lambda: find(shop.home, kind=kind, state="awaiting_human"), 60, f"{kind} asked"
    )
    key = dedup_key(int(inc["id"]))
    assert inc["id"] != ended
    asked = f"Incident #{inc['id']} needs a human"
    wait_for(lambda: asked in out.read_text(), 30, "the console's question")
    shop.pd.wait_for(lambda s: len(s.actions(key)) >= 1)
    assert shop.pd.actions(key) == ["trigger"]
    assert shop.related(ended) == []


def test_a_critical_signal_joining_an_asked_warning_pages_its_route_once(shop: Shop) -> None:
    home, pd = shop.home, shop.pd
    with warning_asked(shop) as (_, root):
        (first,) = shop.hook.wait_for(1)
        assert (first["action"], first["incident"]["id"]) == ("trigger", root)
        assert pd.events == []  # a warning pages the warning route only
        shop.service.healthy = False  # the real fault: the HTTP check fails, critical
        wait_for(lambda: "shop-http" in shop.related(root), 60, "the check to join")
        pd.wait_for(lambda s: len(s.events) >= 1)
        (trigger,) = pd.events
        assert trigger["event_action"] == "trigger" and trigger["dedup_key"] == dedup_key(root)
        assert trigger["payload"]["severity"] == "critical"  # the incident's, risen by the join
        assert show(home, root)["severity"] == "critical"
        shop.write(PAYMENT.format(n=7))  # more signals join: nobody is paged twice
        wait_for(lambda: len(show(home, root)["related"]) == 2, 60, "the second join")
        shop.write(PAYMENT.format(n=8))
        wait_for(lambda: show(home, root)["related"][1]["count"] >= 2, 60, "it counted")
        time.sleep(2)  # time enough for a wrong second trigger to be sent
        assert pd.actions(dedup_key(root)) == ["trigger"]
        assert [b["action"] for b in shop.hook.wait_for(1)] == ["trigger"]
        assert find(home, kind="http_status") is None  # one fault, one incident


def test_a_muted_incident_absorbs_no_signal_of_another_monitor(shop: Shop) -> None:
    with warning_asked(shop) as (out, noise):
        db = shop.home.database()
        try:  # a person mutes the noise, as the question's mute button does
            queue_command(db, incident_id=noise, verb="mute", **as_cli("bob"), fix="600")
        finally:
            db.dispose()
        wait_for(lambda: find(shop.home, id=noise, state="muted"), 60, "the noise muted")
        shop.service.healthy = False  # the real fault
        opens_its_own(shop, out, "http_status", noise)


def test_a_resolved_incident_absorbs_no_signal_of_another_monitor(shop: Shop) -> None:
    home = shop.home
    shop.watch(http_resolves=True)
    shop.service.healthy = False
    with running_guard(home) as (_, out):
        inc = wait_for(lambda: find(home, kind="http_status", state="awaiting_human"), 60, "asked")
        shop.service.healthy = True  # it heals: the check passes and resolves it
        wait_for(lambda: find(home, id=inc["id"], state="resolved"), 60, "it resolved")
        shop.write(PAYMENT.format(n=1))  # another monitor's critical signal, within the window
        opens_its_own(shop, out, "payment_timeout", int(inc["id"]))
