"""A Slack for tests: the Web API methods Guard calls and the Socket Mode websocket, real HTTP
and a real websocket on 127.0.0.1 (aiohttp), every call kept.

Web API (``/api/<method>``): form, query or JSON bodies as ``slack_sdk`` sends them, the token
in ``Authorization: Bearer``. Answers as Slack does: HTTP 200 with ``{"ok": false, "error"}``
for ``not_authed``/``invalid_auth`` (a wrong token), ``not_allowed_token_type`` (a bot token
where an app-level one is needed and the other way round), ``channel_not_found``,
``message_not_found``, ``cant_update_message`` (not the bot's), ``invalid_blocks`` (a block over
its limits: ``tests.fakes.slack_blocks``), and HTTP 429 with ``Retry-After`` and
``ratelimited`` when told to (``fail``). Message ids are ``ts`` strings, increasing per channel;
thread replies are kept apart from the channel's history, as ``conversations.history`` and
``conversations.replies`` return them.

Socket Mode: ``apps.connections.open`` (app-level token) returns ``ws://…/link/?ticket=…``; the
websocket says ``hello``, then carries envelopes (``events_api``, ``interactive``,
``slash_commands``) that the client acks by ``envelope_id``. An envelope not acked when its
connection closes is delivered again on the next one (``retry_attempt`` counted), as Slack
retries; ``disconnect()`` sends ``{"type": "disconnect"}`` and closes, and the client opens a new
connection. ``http_deliver`` posts a payload to an Events/Interactivity endpoint signed as Slack
signs (``X-Slack-Signature``), or forged, or stale.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack_blocks import refusal

BOT_TOKEN = "xoxb-1111-2222-SECRETslackbot"
APP_TOKEN = "xapp-1-A0GUARD-3333-SECRETslackapp"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0GUARD01"
BOT_USER, BOT_ID, TEAM = "U0GUARDBOT", "B0GUARDBOT", "T0GUARD"
APP_METHODS = {"apps.connections.open"}


class SlackServer:
    def __init__(self, channels: tuple[str, ...] = (CHANNEL,)) -> None:
        self.channels = set(channels)
        self.calls: list[dict[str, Any]] = []
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.acked: list[str] = []
        self.envelopes: list[dict[str, Any]] = []
        self.hellos = 0
        self._failures: dict[str, list[tuple[int, str, int | None]]] = {}
        self._unacked: dict[str, dict[str, Any]] = {}
        self._ws: web.WebSocketResponse | None = None
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The Web API's base URL (``WebClient(base_url=...)``)."""
        return f"http://127.0.0.1:{self.port}/api/"

    def start(self) -> SlackServer:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app, access_log=None)
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", self.port)
            self.loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            self.loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="fake-slack")
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    # -- the Web API ----------------------------------------------------------------------------

    def fail(
        self,
        method: str,
        error: str = "ratelimited",
        *,
        status: int = 200,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls of ``method`` fail (429 with ``Retry-After`` for a limit)."""
        with self._lock:
            self._failures.setdefault(method, []).extend([(status, error, retry_after)] * times)

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        body = await request.read()
        if body and request.content_type == "application/json":
            params.update(json.loads(body))
        elif body:
            params.update(dict(urllib.parse.parse_qsl(body.decode())))
        for key in ("blocks", "attachments"):
            if isinstance(params.get(key), str):
                params[key] = json.loads(params[key])
        auth = request.headers.get("Authorization", "")
        token = (
            auth.removeprefix("Bearer ")
            if auth.startswith("Bearer ")
            else params.pop("token", None)
        )
        with self._lock:
            self.calls.append(
                {
                    "method": method,
                    "params": params,
                    "token": token,
                    "content_type": request.content_type,
                    "at": time.monotonic(),
                }
            )
            failures = self._failures.get(method)
            failure = failures.pop(0) if failures else None
        if failure is not None:
            status, error, after = failure
            headers = {"Retry-After": str(after)} if after is not None else {}
            return web.json_response({"ok": False, "error": error}, status=status, headers=headers)
        answer = self._answer(method, token, params)
        return web.json_response(answer)

    def _answer(self, method: str, token: str | None, p: dict[str, Any]) -> dict[str, Any]:
        if not token:
            return {"ok": False, "error": "not_authed"}
        want = APP_TOKEN if method in APP_METHODS else BOT_TOKEN
        if token != want:
            other = token in (APP_TOKEN, BOT_TOKEN)
            return {"ok": False, "error": "not_allowed_token_type" if other else "invalid_auth"}
        handler: Callable[[dict[str, Any]], dict[str, Any]] | None = getattr(
            self, "api_" + method.replace(".", "_"), None
        )
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        if "channel" in p and p["channel"] not in self.channels:
            return {"ok": False, "error": "channel_not_found"}
        return handler(p)

    def api_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://guard-test.slack.com/",
            "team": "Guard Test",
            "user": "guard",
            "team_id": TEAM,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
        }

    def _next_ts(self) -> str:
        n = next(self._ts)
        return f"{1733472000 + n}.{n:06d}"

    def api_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        refused = refusal(p)
        if refused is not None:
            error, messages = refused
            return {"ok": False, "error": error, "response_metadata": {"messages": messages}}
        thread = p.get("thread_ts")
        if thread is not None and (p["channel"], thread) not in self.messages:
            return {"ok": False, "error": "thread_not_found"}
        ts = self._next_ts()
        msg = {
            "type": "message",
            "ts": ts,
            "text": p.get("text", ""),
            "blocks": p.get("blocks"),
            "bot_id": BOT_ID,
            "user": BOT_USER,
            "channel": p["channel"],
        }
        if thread is not None:
            msg["thread_ts"] = thread
        with self._lock:
            self.messages[(p["channel"], ts)] = msg
        return {"ok": True, "channel": p["channel"], "ts": ts, "message": msg}

    def api_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        msg = self.messages.get((p["channel"], str(p.get("ts"))))
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        if msg.get("bot_id") != BOT_ID:
            return {"ok": False, "error": "cant_update_message"}
        refused = refusal(p)
        if refused is not None:
            error, messages = refused
            return {"ok": False, "error": error, "response_metadata": {"messages": messages}}
        with self._lock:
            msg.update(text=p.get("text", ""), blocks=p.get("blocks"), edited={"user": BOT_USER})
        return {"ok": True, "channel": p["channel"], "ts": msg["ts"], "text": msg["text"]}

    def api_chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        if not p.get("user") or not p.get("text"):
            return {"ok": False, "error": "no_text" if p.get("user") else "user_not_found"}
        return {"ok": True, "message_ts": self._next_ts()}

    def _listing(self, channel: str, keep: Callable[[dict[str, Any]], bool]) -> list[Any]:
        with self._lock:
            found = [m for (c, _), m in self.messages.items() if c == channel and keep(m)]
        return sorted(found, key=lambda m: float(m["ts"]), reverse=True)

    def api_conversations_history(self, p: dict[str, Any]) -> dict[str, Any]:
        oldest = float(p.get("oldest") or 0)
        found = self._listing(
            p["channel"], lambda m: "thread_ts" not in m and float(m["ts"]) > oldest
        )
        return {"ok": True, "messages": found[: int(p.get("limit") or 100)], "has_more": False}

    def api_conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        ts = str(p.get("ts"))
        if (p["channel"], ts) not in self.messages:
            return {"ok": False, "error": "thread_not_found"}
        found = self._listing(p["channel"], lambda m: m["ts"] == ts or m.get("thread_ts") == ts)
        return {
            "ok": True,
            "messages": sorted(found, key=lambda m: float(m["ts"])),
            "has_more": False,
        }

    def api_apps_connections_open(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket=t{next(self._ids)}"}

    # -- Socket Mode ----------------------------------------------------------------------------

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "connection_info": {"app_id": "A0GUARD"},
                "debug_info": {},
            }
        )
        self.hellos += 1
        self._ws = ws
        for envelope in list(self._unacked.values()):  # Slack retries what was not acked
            envelope["retry_attempt"] = envelope.get("retry_attempt", 0) + 1
            await ws.send_json(envelope)
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                envelope_id = json.loads(msg.data).get("envelope_id")
                if envelope_id:
                    self.acked.append(envelope_id)
                    self._unacked.pop(envelope_id, None)
        if self._ws is ws:
            self._ws = None
        return ws

    def connected(self) -> bool:
        return self._ws is not None and not self._ws.closed

    def push(self, kind: str, payload: dict[str, Any]) -> str:
        """Send an envelope over the open websocket (or hold it for the next one)."""
        envelope_id = f"env-{next(self._ids)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": 0,
        }
        self.envelopes.append(envelope)
        self._unacked[envelope_id] = envelope

        async def send() -> None:
            if self._ws is not None and not self._ws.closed:
                await self._ws.send_json(envelope)

        self._run(send())
        return envelope_id

    def redeliver(self, envelope_id: str) -> None:
        """Deliver an envelope again, as Slack does when the ack did not reach it in time."""
        [envelope] = [e for e in self.envelopes if e["envelope_id"] == envelope_id]
        self._unacked[envelope_id] = {**envelope, "retry_attempt": 1}
        self._run(self._ws.send_json(self._unacked[envelope_id]) if self._ws else asyncio.sleep(0))

    def disconnect(self, *, then_push: tuple[str, dict[str, Any]] | None = None) -> None:
        """Ask the client to reconnect (``disconnect``), then close the socket; ``then_push``
        is sent between the two (the client may not ack it before the close: it comes again)."""

        async def go() -> None:
            ws = self._ws
            if ws is None:
                return
            await ws.send_json({"type": "disconnect", "reason": "refresh_requested"})
            if then_push is not None:
                kind, payload = then_push
                envelope_id = f"env-{next(self._ids)}"
                envelope = {
                    "envelope_id": envelope_id,
                    "type": kind,
                    "payload": payload,
                    "accepts_response_payload": True,
                    "retry_attempt": 0,
                }
                self.envelopes.append(envelope)
                self._unacked[envelope_id] = envelope
                await ws.send_json(envelope)
            self._ws = None
            await ws.close()

        self._run(go())

    # -- what people do -------------------------------------------------------------------------

    def say(
        self, user: str, text: str, *, channel: str = CHANNEL, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """A person posts ``text`` (in a thread with ``thread_ts``): the ``message`` event."""
        ts = self._next_ts()
        event = {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": ts,
            "channel_type": "channel",
            "event_ts": ts,
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        with self._lock:
            self.messages[(channel, ts)] = dict(event)
        return {
            "token": "verification",
            "team_id": TEAM,
            "api_app_id": "A0GUARD",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
        }

    def press(self, user: str, value: str, *, ts: str, channel: str = CHANNEL) -> dict[str, Any]:
        """A person presses the button whose value is ``value`` on message ``ts``."""
        msg = self.messages.get((channel, ts), {"ts": ts, "text": "", "type": "message"})
        action_ts = f"{time.time():.6f}"
        return {
            "type": "block_actions",
            "user": {"id": user, "username": user, "team_id": TEAM},
            "api_app_id": "A0GUARD",
            "team": {"id": TEAM},
            "trigger_id": f"tr{action_ts}",
            "container": {"type": "message", "message_ts": ts, "channel_id": channel},
            "channel": {"id": channel},
            "message": msg,
            "response_url": f"http://127.0.0.1:{self.port}/respond",
            "actions": [
                {
                    "type": "button",
                    "action_id": f"guard:{value[:40]}",
                    "block_id": "guard:buttons",
                    "value": value,
                    "action_ts": action_ts,
                }
            ],
        }

    def slash(
        self, user: str, command: str, text: str, *, channel: str = CHANNEL
    ) -> dict[str, Any]:
        """A person types ``command text`` (a slash command the app registered)."""
        return {
            "token": "verification",
            "team_id": TEAM,
            "channel_id": channel,
            "user_id": user,
            "command": command,
            "text": text,
            "api_app_id": "A0GUARD",
            "trigger_id": f"tr{next(self._ids)}.{time.time():.6f}",
            "response_url": f"http://127.0.0.1:{self.port}/respond",
        }

    # -- the HTTP endpoint's side ---------------------------------------------------------------

    @staticmethod
    def http_deliver(
        url: str,
        body: bytes,
        *,
        secret: str = SIGNING_SECRET,
        at: float | None = None,
        content_type: str = "application/json",
    ) -> int:
        """POST ``body`` to an Events/Interactivity endpoint signed as Slack signs it (with
        ``secret``, at ``at``: a forged or stale request): the HTTP status it answered."""
        stamp = str(int(time.time() if at is None else at))
        base = b"v0:" + stamp.encode() + b":" + body
        sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
        req = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={
                "Content-Type": content_type,
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": sig,
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    # -- what Guard did -------------------------------------------------------------------------

    def sent(self, method: str = "chat.postMessage") -> list[dict[str, Any]]:
        with self._lock:
            return [c for c in self.calls if c["method"] == method]

    def bot_messages(self, contains: str = "") -> list[dict[str, Any]]:
        with self._lock:
            return [
                m
                for m in self.messages.values()
                if m.get("bot_id") == BOT_ID and contains in m.get("text", "")
            ]
