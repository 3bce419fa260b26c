"""People end incidents on the stack: `guard mute`, `guard resolve` and a silence with an
expiry, from the CLI and from the web console served by the same `guard run` (real HTTP,
a signed-in operator, CSRF forms)."""

from __future__ import annotations

import json
import time
from datetime import datetime

import httpx

from tests.flows.ledger import Flow
from tests.flows.scenarios import get, paid
from tests.helpers.agent import show, wait_for
from tests.webui.helpers import CSRF, cli_token, console_url, csrf_of

SILENCE = 12.0  # seconds


def resolved(flow: Flow, incident_id: int) -> None:
    wait_for(
        lambda: show(flow.home, incident_id)["state"] == "resolved", 30, f"#{incident_id} resolved"
    )


def by_cli(flow: Flow) -> None:
    home = flow.home
    pay = paid(flow, "payment error, ended by hand")
    home.cli("mute", str(pay), "--for", "1h")  # the CLI calls fit in its `resolve_after`
    home.cli("unmute", str(pay))
    home.cli("resolve", str(pay))
    resolved(flow, pay)
    assert any("mute" in t["message"].lower() for t in show(home, pay)["timeline"])

    count = show(home, pay)["count"]
    since = flow.fault("payment error, silenced")
    home.cli("silence", "service=app", "kind=payment_error", "--for", f"{SILENCE:g}s")
    get(flow, "/pay")  # recorded, nobody asked (however late triage lands the line)
    made = json.loads(home.cli("silences", "--all", "--json").stdout)
    listed = next(s for s in made if "payment_error" in s["matchers"])
    expires = datetime.fromisoformat(listed["expires_at"]).timestamp()
    wait_for(
        lambda: (
            sum(i["count"] for i in flow.opened_since(since)) + show(home, pay)["count"] > count
        ),
        30,
        "the silenced line to be recorded",
    )
    time.sleep(3)
    ids = [pay, *(i["id"] for i in flow.opened_since(since))]
    assert flow.questions(ids, since) == 0
    time.sleep(max(0.0, expires + 1 - time.time()))  # the silence expires
    after = flow.fault("payment error, the silence expired")
    get(flow, "/pay")
    wait_for(
        lambda: flow.questions([pay, *(i["id"] for i in flow.opened_since(since))], after) >= 1,
        45,
        "a question once the silence expired",
    )
    flow.kept["asked"] = pay


def by_web(flow: Flow) -> None:
    home, inc = flow.home, flow.kept["asked"]
    token = cli_token(home, "ops", "operator")
    with httpx.Client(base_url=console_url(flow.log), timeout=30) as c:
        login = c.get("/login")
        found = CSRF.search(login.text)
        assert found, login.text
        c.post("/login", data={"csrf": found.group(1), "token": token})
        page = c.get(f"/incidents/{inc}")
        muted = c.post(f"/incidents/{inc}/mute", data={"csrf": csrf_of(page), "for": "1h"})
        assert muted.status_code in (200, 303), muted.text[:2000]
        page = c.get(f"/incidents/{inc}")
        done = c.post(f"/incidents/{inc}/resolve", data={"csrf": csrf_of(page)})
        assert done.status_code in (200, 303), done.text[:2000]
        resolved(flow, inc)
        page = c.get("/silences")
        made = c.post(
            "/silences",
            data={"csrf": csrf_of(page), "matchers": "service=redis kind=disk_full", "for": "1h"},
        )
        assert made.status_code in (200, 303), made.text[:2000]
    assert "disk_full" in home.cli("silences").stdout


def ends_by_hand(flow: Flow) -> None:
    """`guard mute`, `guard resolve` and a silence with an expiry, from the CLI and the web."""
    by_cli(flow)
    by_web(flow)
