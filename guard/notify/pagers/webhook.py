"""The generic signed webhook: a JSON body about the incident, signed with HMAC-SHA256.

Headers on every POST:
- ``X-Guard-Delivery``: the page's id, the same on every attempt (a receiver drops repeats);
- ``X-Guard-Event``: ``trigger``, ``acknowledge`` or ``resolve``;
- ``X-Guard-Timestamp``: Unix seconds when this attempt was signed;
- ``X-Guard-Signature``: ``sha256=`` + hex HMAC-SHA256 of ``"<timestamp>." + raw body`` with the
  notifier's ``hmac_secret``. A receiver recomputes it, compares in constant time, and refuses
  a timestamp older than a few minutes: a captured request cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import httpx

from guard.config.paging import WebhookNotifier
from guard.notify.pagers.http import post_json
from guard.store.paging import PageOutbox

SIGNATURE = "X-Guard-Signature"
TIMESTAMP = "X-Guard-Timestamp"
DELIVERY = "X-Guard-Delivery"
EVENT = "X-Guard-Event"


def body(row: PageOutbox, target: str) -> dict[str, Any]:
    """The JSON a webhook receives."""
    p = row.payload
    return {
        "version": "1",
        "delivery": row.delivery,
        "action": row.action,
        "reason": row.reason,
        "target": target,
        "incident": {
            "id": row.incident_id,
            "title": p.get("title"),
            "severity": p.get("severity"),
            "state": p.get("state"),
            "service": p.get("service"),
            "target": p.get("target"),
            "kind": p.get("kind"),
            "monitor_id": p.get("monitor_id"),
            "count": p.get("count"),
            "message": p.get("message"),
            "opened_at": p.get("opened_at"),
            "link": p.get("link"),
            "url": p.get("url"),  # its console page (public_url), or null
            "commands": p.get("commands"),
        },
        "dedup_key": f"guard-incident-{row.incident_id}",
    }


def sign(secret: str, timestamp: str, raw: bytes) -> str:
    """``sha256=<hex>`` over ``"<timestamp>." + raw``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + raw, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


async def send(
    client: httpx.AsyncClient, row: PageOutbox, target: str, config: WebhookNotifier
) -> None:
    """POST one page, signed; raises Retry/Rejected/Unreachable."""
    raw = json.dumps(body(row, target), sort_keys=True).encode()
    stamp = str(int(time.time()))
    headers = {
        DELIVERY: row.delivery,
        EVENT: row.action,
        TIMESTAMP: stamp,
        SIGNATURE: sign(config.hmac_secret.get_secret_value(), stamp, raw),
        "User-Agent": "Guard-Webhook/1",
    }
    await post_json(client, config.url, raw, seconds=config.timeout, who=target, headers=headers)
