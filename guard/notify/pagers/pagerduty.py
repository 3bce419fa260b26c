"""PagerDuty's Events API v2: one event per page row.

``trigger`` carries the incident (summary, source, severity, custom details, links: the
console's page of it when ``public_url`` is set, and the alert's source);
``acknowledge`` and ``resolve`` only the routing key and the ``dedup_key``, which is the same
for every event about one incident (``guard-incident-<id>``): a repeated trigger adds to the
open alert instead of opening another, so a page sent twice after a crash pages once.
PagerDuty answers 202; 400 is an invalid event (refused for good); 429 and 5xx are retried.
"""

from __future__ import annotations

from typing import Any

import httpx

from guard.config.paging import PagerDutyNotifier
from guard.notify.pagers import dedup_key
from guard.notify.pagers.http import post_json
from guard.store.paging import PageOutbox

SUMMARY_LIMIT = 1024  # PagerDuty's limit for payload.summary
PD_SEVERITY = {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}


def event(row: PageOutbox, config: PagerDutyNotifier) -> dict[str, Any]:
    """The Events API v2 body for a page row."""
    body: dict[str, Any] = {
        "routing_key": config.routing_key.get_secret_value(),
        "event_action": row.action,
        "dedup_key": dedup_key(row.incident_id),
    }
    if row.action != "trigger":
        return body
    p = row.payload
    summary = f"Incident #{row.incident_id} [{p.get('severity')}]: {p.get('title')}"
    details = {
        k: p.get(k)
        for k in ("state", "target", "kind", "monitor_id", "service", "count", "message", "reason")
        if p.get(k) not in (None, "")
    }
    if row.reason:
        details["reason"] = row.reason
    details["commands"] = p.get("commands")
    body["payload"] = {
        "summary": summary[:SUMMARY_LIMIT],
        "source": str(p.get("target") or p.get("monitor_id") or "guard"),
        "severity": PD_SEVERITY.get(str(p.get("severity")), "error"),
        "component": p.get("target") or None,
        "group": p.get("service") or p.get("monitor_id") or None,
        "class": p.get("kind") or None,
        "custom_details": details,
    }
    body["payload"] = {k: v for k, v in body["payload"].items() if v is not None}
    body["client"] = "Guard"
    links = []
    if p.get("url"):  # public_url: the incident's page on the console
        body["client_url"] = p["url"]
        links.append({"href": p["url"], "text": f"Guard incident #{row.incident_id}"})
    if p.get("link"):
        links.append({"href": p["link"], "text": "Source"})
    if links:
        body["links"] = links
    return body


async def send(client: httpx.AsyncClient, row: PageOutbox, config: PagerDutyNotifier) -> str:
    """Send one page; returns PagerDuty's ``dedup_key``, or raises Retry/Rejected/Unreachable."""
    reply = await post_json(
        client, config.url, event(row, config), seconds=config.timeout, who="PagerDuty"
    )
    return str(reply.get("dedup_key") or dedup_key(row.incident_id))
