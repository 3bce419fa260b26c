"""The one place Guard builds a Docker SDK client (monitors, actions, sandboxes, the demo).

Each caller names its purpose's timeout from ``Timeouts``: a monitor's liveness check must fail
fast, an action may wait for a container's stop grace, an image import may take minutes.
The API version is negotiated with the engine once per ``DOCKER_HOST``; a later client that pings
the engine reuses it, so a client for one action or one verification costs one ``/_ping`` (which
still tells an unreachable engine at once), not a ``/version`` and a ping.

The engine is docker's own environment's, read by the SDK (``docker.from_env``): ``DOCKER_HOST``
as ``unix://``, ``tcp://`` (with ``DOCKER_TLS_VERIFY`` and ``DOCKER_CERT_PATH``: a remote engine
over TLS) or ``ssh://user@host`` (docker-py's paramiko transport, with the key and
``known_hosts`` under ``~/.ssh``); every client Guard makes comes from here, so monitors, actions
and sandboxes reach the same engine. ``EngineUnreachable`` names that engine and the likely fix
for its kind of address (docs/SANDBOX.md, "A remote engine").
"""

from __future__ import annotations

import sys
from typing import Any

import docker
from docker.constants import DEFAULT_DOCKER_API_VERSION
from docker.errors import DockerException

from guard.util.docker_engine import Timeouts as Timeouts  # callers name their timeout here
from guard.util.docker_engine import engine_address, unreachable_message

_versions: dict[str, str] = {}  # DOCKER_HOST -> the API version negotiated with it


class EngineUnreachable(DockerException):  # type: ignore[misc]
    """The engine named by ``DOCKER_HOST`` (default: the local socket) did not answer."""


def ssh_transport() -> None:
    """Load docker-py's ssh:// transport (paramiko), kept out of memory until an engine at
    ``ssh://`` needs it (guard/__init__.py). Without paramiko, docker-py's own error says so."""
    import docker.api.client as api

    if getattr(api, "SSHHTTPAdapter", None) is not None:
        return
    if "docker.transport.sshconn" in sys.modules and not sys.modules["docker.transport.sshconn"]:
        del sys.modules["docker.transport.sshconn"]
    try:
        from docker.transport.sshconn import SSHHTTPAdapter
    except ImportError:
        return
    api.SSHHTTPAdapter = SSHHTTPAdapter  # type: ignore[attr-defined]


def unreachable(exc: BaseException) -> EngineUnreachable:
    """The error for an engine that did not answer: where it was looked for, and the fix."""
    return EngineUnreachable(unreachable_message(exc))


def _client(timeout: float, version: str, pool: int = 10) -> Any:
    """A client of ``version`` (no request made yet), its session fit for the engine, keeping
    ``pool`` connections to it."""
    if engine_address().startswith("ssh://"):
        ssh_transport()
    client = docker.from_env(timeout=int(timeout), version=version, max_pool_size=pool)
    if isinstance(client.api.verify, str):  # DOCKER_CERT_PATH's ca.pem: the engine's CA
        # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE replace a session's CA file
        # (psf/requests#3829): the engine's certificate would be checked against the public
        # CAs and refused. Nothing else of the environment applies to the engine.
        client.api.trust_env = False
    return client


def docker_client(
    timeout: Timeouts | float = Timeouts.call, *, ping: bool = True, pool: int = 10
) -> Any:
    """A client for the engine named by ``DOCKER_HOST``; with ``ping``, checked to answer;
    ``pool``: connections kept to the engine (requests in flight at once)."""
    host = engine_address()
    try:
        known = _versions.get(host) if ping else None  # without a ping: /version checks
        client = _client(timeout, known or DEFAULT_DOCKER_API_VERSION, pool)
        if known is None:  # what version="auto" does, on a session that trusts the engine's CA
            found = str(client.api.version(api_version=False)["ApiVersion"])
            if found != client.api.api_version:
                client.close()
                client = _client(timeout, found, pool)
        _versions[host] = client.api.api_version
        if ping:
            client.ping()
    except Exception as exc:  # requests' connection errors when the socket is not there
        raise unreachable(exc) from exc
    return client
