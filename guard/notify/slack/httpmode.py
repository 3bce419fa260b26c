"""The Events/Interactivity HTTP endpoint (``slack.mode: http``): ``POST /slack/events`` on
``slack.listen:slack.port``, for a Guard Slack can reach (behind a reverse proxy with TLS).

A request is believed only with a valid ``X-Slack-Signature`` (HMAC-SHA256 of
``v0:{timestamp}:{body}`` under the signing secret) and an ``X-Slack-Request-Timestamp`` within
five minutes (slack_sdk's ``SignatureVerifier``): anything else gets 401 and nothing happens, so
a forged or replayed press never reaches the gate. Events come as JSON (``url_verification``
answered with its challenge), presses as a form with a JSON ``payload``, slash commands as a
form; each is handed to the gateway as Socket Mode would hand it.

Tested by tests/notify/test_slack_gateway.py.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from loguru import logger
from slack_sdk.signature import SignatureVerifier

from guard.notify.slack.updates import Delivery

PATH = "/slack/events"


def delivery(body: bytes, content_type: str) -> tuple[Delivery | None, dict[str, Any]]:
    """What the request carries, and the immediate JSON answer (a challenge, or nothing)."""
    if content_type == "application/json":
        payload = json.loads(body)
        if payload.get("type") == "url_verification":
            return None, {"challenge": payload.get("challenge")}
        return Delivery("events_api", payload), {}
    form = dict(parse_qsl(body.decode()))
    if "payload" in form:
        return Delivery("interactive", json.loads(form["payload"])), {}
    if "command" in form:
        return Delivery("slash_commands", form), {}
    return None, {}


async def serve(
    listen: str, port: int, secret: str, handle: Callable[[Delivery], Awaitable[None]]
) -> web.AppRunner:
    """Start serving the endpoint, handing each delivery to ``handle``; returns the runner to
    ``cleanup`` on stop."""
    verifier = SignatureVerifier(secret)

    async def events(request: web.Request) -> web.Response:
        body = await request.read()
        if not verifier.is_valid(
            body,
            request.headers.get("X-Slack-Request-Timestamp", ""),
            request.headers.get("X-Slack-Signature", ""),
        ):
            logger.warning("slack endpoint: refused a request with a bad or stale signature")
            return web.json_response({"error": "invalid signature"}, status=401)
        try:
            found, answer = delivery(body, request.content_type)
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"error": "unreadable body"}, status=400)
        if found is not None:
            await handle(found)
        return web.json_response(answer)

    app = web.Application()
    app.router.add_post(PATH, events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, listen, port).start()
    logger.info("slack endpoint listening on {}:{}{}", listen, port, PATH)
    return runner
