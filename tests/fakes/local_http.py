"""A threaded HTTP server on 127.0.0.1 for tests that need a service to watch or call."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    """A threaded server that does not print a traceback when a client hangs up mid-reply
    (Guard killed by the crash harness, a timeout): that is the client's doing, not a fault."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class Connections:
    """The connections a server holds open, so that stopping it cuts its kept-alive ones too,
    as a service that goes away does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[Any] = set()

    def add(self, sock: Any) -> None:
        with self._lock:
            self._open.add(sock)

    def discard(self, sock: Any) -> None:
        with self._lock:
            self._open.discard(sock)

    def cut(self) -> None:
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class KeptAlive(BaseHTTPRequestHandler):
    """An HTTP/1.1 handler (connections kept alive) that sends each answer at once, as real
    servers do (TCP_NODELAY): with Nagle's algorithm on, the body (a second send after the
    headers) waits for the client's delayed ACK, 40 ms a request on a kept-alive connection."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True


class Tracked(KeptAlive):
    """A kept-alive handler whose open connection its server's ``connections`` knows."""

    connections: Connections

    def setup(self) -> None:
        super().setup()
        self.connections.add(self.connection)

    def finish(self) -> None:
        self.connections.discard(self.connection)
        super().finish()


def serve(handler: type[BaseHTTPRequestHandler], port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start serving ``handler`` on ``port`` (0: a free one); returns the server and its base
    URL."""
    server = QuietServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()
