"""A PagerDuty Events API v2 server for tests: real HTTP on 127.0.0.1, PagerDuty's shapes.

It serves ``POST /v2/enqueue`` and validates each event as PagerDuty does: a 32-character
``routing_key``, an ``event_action`` of ``trigger``/``acknowledge``/``resolve``, a
``dedup_key`` of at most 255 characters (required for acknowledge and resolve), and for a
trigger a ``payload`` with ``summary`` (at most 1024 characters), ``source`` and a
``severity`` of ``critical``/``error``/``warning``/``info``. A bad event gets 400
``{"status": "invalid event", "message": "Event object is invalid", "errors": [...]}``;
a good one 202 ``{"status": "success", "message": "Event processed", "dedup_key": ...}``.

Accepted events are kept (``events``), and alerts are tracked the way PagerDuty applies events
to them: per (routing_key, dedup_key) a trigger opens an alert (or adds to the open one), an
acknowledge or resolve changes the open alert and is dropped when there is none. ``alerts``
lists every alert ever opened, so a test can count pages that really reached a person.

Tests can make it answer 429 (rate limit) or 5xx for the next N events (``fail``), stall
requests (``stall_for``), or stop and start it again on the same port (an outage).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fakes.local_http import Connections, Tracked, serve, stop

ACTIONS = ("trigger", "acknowledge", "resolve")
SEVERITIES = ("critical", "error", "warning", "info")
ROUTING_KEY = "R0UT1NGKEY0123456789abcdef012345"  # 32 characters, as PagerDuty's keys are
assert len(ROUTING_KEY) == 32


def validate(event: Any) -> list[str]:
    """PagerDuty's reasons for refusing ``event`` (an empty list: it is accepted)."""
    if not isinstance(event, dict):
        return ["Event object is not a JSON object"]
    errors: list[str] = []
    key = event.get("routing_key")
    if not isinstance(key, str) or not key:
        errors.append("'routing_key' is missing or blank")
    elif len(key) != 32:
        errors.append("'routing_key' must be 32 characters")
    action = event.get("event_action")
    if action not in ACTIONS:
        errors.append("'event_action' is invalid (must be one of trigger, acknowledge, resolve)")
    dedup = event.get("dedup_key")
    if dedup is not None and (not isinstance(dedup, str) or len(dedup) > 255):
        errors.append("'dedup_key' must be a string of at most 255 characters")
    if action in ("acknowledge", "resolve") and not dedup:
        errors.append("'dedup_key' is missing or blank")
    if action == "trigger":
        errors.extend(_payload_errors(event.get("payload")))
    links = event.get("links")
    if links is not None and (
        not isinstance(links, list)
        or not all(isinstance(link, dict) and isinstance(link.get("href"), str) for link in links)
    ):
        errors.append("'links' must be a list of objects with an 'href'")
    return errors


def _payload_errors(payload: Any) -> list[str]:
    if not isinstance(payload, dict):
        return ["'payload' is missing or not an object"]
    errors: list[str] = []
    summary = payload.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        errors.append("'payload.summary' is missing or blank")
    elif len(summary) > 1024:
        errors.append("'payload.summary' must be at most 1024 characters")
    source = payload.get("source")
    if not isinstance(source, str) or not source.strip():
        errors.append("'payload.source' is missing or blank")
    if payload.get("severity") not in SEVERITIES:
        errors.append(
            "'payload.severity' is invalid (must be one of critical, error, warning, info)"
        )
    details = payload.get("custom_details")
    if details is not None and not isinstance(details, (dict, str)):
        errors.append("'payload.custom_details' must be an object")
    return errors


class PagerDutyServer:
    """The local Events API v2. ``url`` is the enqueue endpoint to configure."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests: list[dict[str, Any]] = []  # every POST: body (parsed or raw), status
        self.events: list[dict[str, Any]] = []  # accepted events, in order
        self.alerts: list[dict[str, Any]] = []  # every alert opened: key, dedup_key, state, log
        self.failures: list[tuple[int, dict[str, Any]]] = []
        self.stalled_until = 0.0
        self.up = False
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self.connections = Connections()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v2/enqueue"

    def start(self) -> PagerDutyServer:
        server = self

        class Handler(Tracked):
            connections = server.connections

            def do_POST(self) -> None:
                held = server.stalled_until - time.monotonic()
                if held > 0:  # no answer until the client gives up; nothing is kept
                    time.sleep(held)
                    self.close_connection = True
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, reply = server.handle(self.path, self.headers, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server, _ = serve(Handler, self.port)
        self.port = self._server.server_port
        self.up = True
        return self

    def stop(self) -> None:
        """Go away (connections refused) until ``start`` again; what was received is kept."""
        self.up = False
        if self._server is not None:
            stop(self._server)
            self._server = None
        self.connections.cut()

    # -- the API --------------------------------------------------------------------------------

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        if path.split("?")[0] != "/v2/enqueue":
            return 404, {"status": "not found", "message": "Not Found"}
        try:
            event: Any = json.loads(body)
        except ValueError:
            event = None
            errors = ["Event object is not valid JSON"]
        else:
            errors = validate(event)
        with self._cond:
            record: dict[str, Any] = {"event": event, "raw": body, "headers": dict(headers)}
            self.requests.append(record)
            if self.failures:
                status, reply = self.failures.pop(0)
                record["status"] = status
                self._cond.notify_all()
                return status, reply
            if errors:
                record["status"] = 400
                self._cond.notify_all()
                return 400, {
                    "status": "invalid event",
                    "message": "Event object is invalid",
                    "errors": errors,
                }
            dedup = event.get("dedup_key") or uuid.uuid4().hex
            accepted = dict(event, dedup_key=dedup, received_at=time.time())
            self.events.append(accepted)
            self._apply(accepted)
            record["status"] = 202
            self._cond.notify_all()
        return 202, {"status": "success", "message": "Event processed", "dedup_key": dedup}

    def _apply(self, event: dict[str, Any]) -> None:
        """Apply an accepted event to the alert it names, as PagerDuty does."""
        key = (event["routing_key"], event["dedup_key"])
        open_alert = next(
            (
                a
                for a in reversed(self.alerts)
                if (a["routing_key"], a["dedup_key"]) == key and a["state"] != "resolved"
            ),
            None,
        )
        action = event["event_action"]
        if action == "trigger":
            if open_alert is None:
                open_alert = {
                    "routing_key": key[0],
                    "dedup_key": key[1],
                    "state": "triggered",
                    "summary": event["payload"]["summary"],
                    "severity": event["payload"]["severity"],
                    "log": [],
                }
                self.alerts.append(open_alert)
            open_alert["log"].append(action)
        elif open_alert is not None:  # acknowledge / resolve without an open alert: dropped
            open_alert["state"] = "acknowledged" if action == "acknowledge" else "resolved"
            open_alert["log"].append(action)

    # -- test controls --------------------------------------------------------------------------

    def fail(self, status: int = 429, *, times: int = 1) -> None:
        """Answer the next ``times`` events with ``status`` (429 rate limit, 500, 502..., or 400
        "invalid event" as PagerDuty answers one it cannot take)."""
        reply = (
            {
                "status": "invalid event",
                "message": "Event object is invalid",
                "errors": ["'payload.summary' is invalid"],
            }
            if status == 400
            else (
                {
                    "status": "throttle event",
                    "message": "Requests for this service are arriving too quickly. Please retry later.",
                }
                if status == 429
                else {"status": "error", "message": "Internal Server Error"}
            )
        )
        with self._cond:
            self.failures.extend([(status, reply)] * times)

    def stall_for(self, seconds: float) -> None:
        """Hold every request unanswered for ``seconds``, then drop it (the client times out)."""
        self.stalled_until = time.monotonic() + seconds

    def wait_for(self, predicate: Callable[[PagerDutyServer], bool], timeout: float = 60.0) -> None:
        """Poll until ``predicate(self)`` holds (AssertionError after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"PagerDuty server: condition not met in {timeout}s; events={self.events!r}"
                    )
                self._cond.wait(min(left, 0.2))

    def events_for(self, dedup_key: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["dedup_key"] == dedup_key]

    def actions(self, dedup_key: str) -> list[str]:
        return [e["event_action"] for e in self.events_for(dedup_key)]


@contextlib.contextmanager
def running(port: int = 0) -> Iterator[PagerDutyServer]:
    """A started server, stopped afterwards."""
    server = PagerDutyServer(port).start()
    try:
        yield server
    finally:
        server.stop()
