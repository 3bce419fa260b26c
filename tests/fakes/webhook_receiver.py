"""A webhook receiver for tests: real HTTP on 127.0.0.1 that checks Guard's signature as the
docs tell a receiver to (docs/PAGING.md), and drops repeated deliveries.

Each POST is kept in ``requests`` with its headers, raw body, arrival time and what the
receiver made of it. A POST is accepted (200) only if ``X-Guard-Signature`` is
``sha256=HMAC-SHA256(secret, "<X-Guard-Timestamp>." + raw body)`` and the timestamp is within
``tolerance`` seconds of now; otherwise 401. An accepted delivery id seen before is answered
200 and not acted on again (``processed`` holds each delivery once). ``fail(500, times=n)``
answers the next n POSTs with that status before checking anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.local_http import serve, stop

SECRET = "whsec-test-0123456789abcdef"


def verify(secret: str, headers: Any, raw: bytes, tolerance: float = 300.0) -> str | None:
    """Why a request is not Guard's (None: it is): the receiver-side check from the docs."""
    stamp = headers.get("X-Guard-Timestamp", "")
    given = headers.get("X-Guard-Signature", "")
    if not stamp.isdigit():
        return "no timestamp"
    if abs(time.time() - int(stamp)) > tolerance:
        return "stale timestamp (a replay?)"
    mac = hmac.new(secret.encode(), stamp.encode() + b"." + raw, hashlib.sha256)
    if not hmac.compare_digest(given, "sha256=" + mac.hexdigest()):
        return "bad signature"
    return None


class WebhookReceiver:
    def __init__(self, secret: str = SECRET, tolerance: float = 300.0) -> None:
        self.secret = secret
        self.tolerance = tolerance
        self.requests: list[dict[str, Any]] = []
        self.processed: dict[str, dict[str, Any]] = {}  # delivery id -> body, acted on once
        self.failures: list[int] = []
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = receiver.handle(self.headers, raw)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server, _ = serve(Handler, self.port)
        self.port = self._server.server_port
        return self

    def stop(self) -> None:
        if self._server is not None:
            stop(self._server)
            self._server = None

    def handle(self, headers: Any, raw: bytes) -> int:
        with self._cond:
            record: dict[str, Any] = {
                "headers": dict(headers),
                "raw": raw,
                "at": time.monotonic(),
                "delivery": headers.get("X-Guard-Delivery"),
            }
            self.requests.append(record)
            try:
                if self.failures:
                    record["status"] = self.failures.pop(0)
                    return int(record["status"])
                why = verify(self.secret, headers, raw, self.tolerance)
                if why is not None:
                    record["status"], record["refused"] = 401, why
                    return 401
                body = json.loads(raw)
                record["status"] = 200
                if record["delivery"] in self.processed:
                    record["repeat"] = True
                else:
                    self.processed[record["delivery"]] = body
                return 200
            finally:
                self._cond.notify_all()

    def fail(self, status: int = 500, *, times: int = 1) -> None:
        with self._cond:
            self.failures.extend([status] * times)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Until ``count`` deliveries were processed; returns their bodies in order."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.processed) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"webhook receiver: {len(self.processed)} of {count} deliveries; "
                        f"requests={[(r.get('status'), r.get('refused')) for r in self.requests]}"
                    )
                self._cond.wait(min(left, 0.2))
            return list(self.processed.values())


@contextlib.contextmanager
def receiving(secret: str = SECRET) -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(secret).start()
    try:
        yield receiver
    finally:
        receiver.stop()
