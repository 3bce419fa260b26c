"""``public_url`` on a real ``guard run``: the question in Telegram and the pages (the local
PagerDuty Events API v2 server, a signed webhook) link to ``<public_url>/incidents/N``."""

from __future__ import annotations

from tests.fakes.pagerduty import ROUTING_KEY
from tests.fakes.webhook_receiver import SECRET
from tests.helpers.agent import find, wait_for
from tests.helpers.telegram import configure, guard_run, http_playbook, incident_message

PUBLIC = "https://guard.example.test/ops"  # never contacted: only written into links


def test_questions_and_pages_link_to_the_incident_page(home, tg, service, pd, hook):
    http_playbook(home, service, auto_resolve=False)
    (home.root / "skills").mkdir()  # nothing matches: Guard asks
    configure(
        home,
        tg,
        public_url=PUBLIC + "/",
        notifiers={
            "pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}},
            "webhook": {"ops": {"url": hook.url, "hmac_secret": SECRET}},
        },
        routes=[{"match": {"playbook": "web"}, "notify": ["pagerduty:primary", "webhook:ops"]}],
    )
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        page = f"{PUBLIC}/incidents/{inc['id']}"
        assert page in incident_message(tg, inc["id"])["text"]
        pd.wait_for(lambda s: len(s.events) >= 1)
        (trigger,) = pd.events
        assert trigger["client_url"] == page
        assert {"href": page, "text": f"Guard incident #{inc['id']}"} in trigger["links"]
        (body,) = hook.wait_for(1)
        assert body["incident"]["url"] == page
