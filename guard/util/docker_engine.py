"""Where the Docker engine is, what to say when it does not answer, and a ping that needs no SDK.

``guard.util.docker_client`` builds every Docker SDK client; this module holds what is known
without one, so that a ``guard run`` that only asks whether the engine answers (``/readyz``,
``guard doctor``: ``guard.sandbox.reach``) does not load docker-py and requests (about 7 MB
resident, issue 48). ``ping`` asks the engine at a ``unix://`` address for ``/_ping`` over its
socket; any other address (``tcp://`` with TLS, ``ssh://``) is docker-py's to reach (``None``).
"""

from __future__ import annotations

import os
import socket
from enum import IntEnum
from urllib.parse import urlsplit


class Timeouts(IntEnum):
    """Seconds one Docker API call may take, by what the caller does."""

    monitor = 10  # watching: a slow engine is itself a finding
    call = 60  # actions and the demo: a stop waits for the container's grace period
    sandbox = 120  # sandbox lifecycle: create, exec, remove under load
    build = 900  # importing a rootfs as an image


DEFAULT_HOST = "unix:///var/run/docker.sock"


def engine_address() -> str:
    """Where the engine is: ``DOCKER_HOST``, or the local socket docker-py defaults to."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_HOST


def hint(host: str, detail: str) -> str:
    """What to do about an engine at ``host`` that failed with ``detail``."""
    tls = os.environ.get("DOCKER_TLS_VERIFY") or os.environ.get("DOCKER_CERT_PATH")
    if tls or "ssl" in detail.lower() or "certificate" in detail.lower():
        return (
            "check DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem: a client certificate signed by "
            "the CA the engine trusts) and DOCKER_TLS_VERIFY=1 (docs/SANDBOX.md, A remote engine)"
        )
    if host.startswith("tcp://"):
        return (
            "is the engine (or the socket proxy) listening there? An engine on another machine "
            "demands TLS: set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to its client "
            "certificates (docs/SANDBOX.md, A remote engine)"
        )
    if host.startswith("ssh://") and "paramiko" in detail:
        return (
            "ssh:// needs the paramiko package, which Guard does not install: add it to Guard's "
            "environment (pip install paramiko), or reach the engine over tcp:// with TLS "
            "(docs/DEPLOY.md, A remote engine over TLS)"
        )
    if host.startswith("ssh://"):
        where = urlsplit(host)
        port = f"-p {where.port} " if where.port else ""
        login = f"{where.username}@{where.hostname}" if where.username else where.hostname
        return (
            f"check that `ssh {port}{login} docker version` works here without a prompt (a key "
            "in ssh-agent or ~/.ssh/config; docs/SANDBOX.md, A remote engine)"
        )
    return "start it, or point DOCKER_HOST at it and make sure Guard may use its socket"


def unreachable_message(exc: BaseException) -> str:
    """Says an engine did not answer: where it was looked for, and the fix."""
    host = engine_address()
    shown = host if os.environ.get("DOCKER_HOST") else f"{host} (the default)"
    detail = str(exc) or type(exc).__name__
    return f"cannot reach the Docker engine at DOCKER_HOST={shown} ({detail}): {hint(host, detail)}"


def ping(timeout: float) -> str | None:
    """``""`` when the engine at a ``unix://`` ``DOCKER_HOST`` answers ``/_ping`` with 200, else
    why not (``unreachable_message``); None for an address only the SDK reaches."""
    host = engine_address()
    if not host.startswith("unix://"):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(host[len("unix://") :])
            sock.sendall(b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n")
            status = sock.makefile("rb").readline(256).split()
    except OSError as exc:
        return unreachable_message(exc)
    if len(status) < 2 or status[1] != b"200":
        answer = b" ".join(status[1:]).decode(errors="replace") or "no answer"
        return unreachable_message(ConnectionError(f"/_ping answered {answer}"))
    return ""
