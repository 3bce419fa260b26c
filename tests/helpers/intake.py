"""A real Guard web server with ``intake:`` sources, in process: uvicorn on 127.0.0.1 on an
ephemeral port, the triage intake consuming, and payloads in the senders' documented shapes."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import httpx
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from sqlmodel import col, select

from guard.app import Guard
from guard.store.models import Incident
from guard.web.server import WebServer
from tests.conftest import GuardHome

TOKEN = "s3cr3t-hook-token-9f8e7d6c5b4a"
HMAC_KEY = "hmac-key-0a1b2c3d4e5f"
ZERO = "0001-01-01T00:00:00Z"


@dataclass
class Served:
    guard: Guard
    web: WebServer
    client: httpx.AsyncClient

    async def post(
        self, hook: str, body: Any, *, token: str | None = TOKEN, **headers: str
    ) -> httpx.Response:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
        return await self.client.post(f"/hooks/{hook}", content=raw, headers=headers)

    def incidents(self) -> list[Incident]:
        with self.guard.db.session() as session:
            return list(session.exec(select(Incident).order_by(col(Incident.id))).all())


@asynccontextmanager
async def serving(home: GuardHome, intake: list[dict[str, Any]]) -> AsyncIterator[Served]:
    home.write_config({"http_host": "127.0.0.1", "http_port": 0, "intake": intake})
    guard = Guard(home.settings(), home.playbooks_loaded(), heal=False)
    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.start()
    consumer = asyncio.create_task(guard.intake.consume())
    web = WebServer(guard, scheduler)
    await web.start()
    client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{web.port}", timeout=30)
    try:
        yield Served(guard, web, client)
    finally:
        await client.aclose()
        await web.close()
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)
        scheduler.shutdown(wait=False)
        await guard.close()


def am_source(**extra: Any) -> dict[str, Any]:
    return {"id": "am", "type": "alertmanager", "token": TOKEN, **extra}


def am_alert(
    name: str,
    instance: str,
    *,
    status: str = "firing",
    starts: str = "2026-12-05T07:00:00Z",
    severity: str = "critical",
    fingerprint: str | None = None,
) -> dict[str, Any]:
    labels = {"alertname": name, "instance": instance, "job": "node", "severity": severity}
    fp = fingerprint or hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "status": status,
        "labels": labels,
        "annotations": {"summary": f"{name} on {instance}", "description": "see the runbook"},
        "startsAt": starts,
        "endsAt": ZERO if status == "firing" else "2026-12-05T07:10:00Z",
        "generatorURL": "http://prometheus:9090/graph?g0.expr=up+%3D%3D+0",
        "fingerprint": fp,
    }


def am_payload(*alerts: dict[str, Any]) -> dict[str, Any]:
    """Alertmanager's webhook body, version 4."""
    firing = any(a["status"] == "firing" for a in alerts)
    return {
        "version": "4",
        "groupKey": '{}:{alertname="X"}',
        "truncatedAlerts": 0,
        "status": "firing" if firing else "resolved",
        "receiver": "guard",
        "groupLabels": {"alertname": alerts[0]["labels"]["alertname"]} if alerts else {},
        "commonLabels": {"job": "node"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts),
    }


def signature(body: bytes, key: str = HMAC_KEY) -> str:
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


async def eventually(probe: Callable[[], Any], what: str, within: float = 30) -> Any:
    end = time.monotonic() + within
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def stamped(body: bytes, at: float, key: str = HMAC_KEY) -> dict[str, str]:
    """The headers of a body signed with a timestamp, as Grafana signs (``<ts>:<body>``)."""
    stamp = str(int(at))
    mac = hmac.new(key.encode(), stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Signature": f"sha256={mac}", "X-Signature-Timestamp": stamp}
