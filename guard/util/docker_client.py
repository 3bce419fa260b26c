"""The one place Guard builds a Docker SDK client (monitors, actions, sandboxes, the demo).

Each caller names its purpose's timeout from ``Timeouts``: a monitor's liveness check must fail
fast, an action may wait for a container's stop grace, an image import may take minutes.
The API version is negotiated with the engine once per ``DOCKER_HOST``; a later client that pings
the engine reuses it, so a client for one action or one verification costs one ``/_ping`` (which
still tells an unreachable engine at once), not a ``/version`` and a ping.
"""

from __future__ import annotations

import os
from enum import IntEnum
from typing import Any

import docker
from docker.errors import DockerException


class Timeouts(IntEnum):
    """Seconds one Docker API call may take, by what the caller does."""

    monitor = 10  # watching: a slow engine is itself a finding
    call = 60  # actions and the demo: a stop waits for the container's grace period
    sandbox = 120  # sandbox lifecycle: create, exec, remove under load
    build = 900  # importing a rootfs as an image


_versions: dict[str, str] = {}  # DOCKER_HOST -> the API version negotiated with it


class EngineUnreachable(DockerException):  # type: ignore[misc]
    """The engine named by ``DOCKER_HOST`` (default: the local socket) did not answer."""


def docker_client(
    timeout: Timeouts | float = Timeouts.call, *, ping: bool = True, pool: int = 10
) -> Any:
    """A client for the engine named by ``DOCKER_HOST``; with ``ping``, checked to answer;
    ``pool``: connections kept to the engine (requests in flight at once)."""
    host = os.environ.get("DOCKER_HOST", "")
    try:
        known = _versions.get(host) if ping else None  # without a ping: /version checks
        client = docker.from_env(timeout=int(timeout), version=known, max_pool_size=pool)
        _versions[host] = client.api.api_version
        if ping:
            client.ping()
    except DockerException as exc:
        raise EngineUnreachable(str(exc)) from exc
    except Exception as exc:  # requests' connection errors when the socket is not there
        raise EngineUnreachable(str(exc)) from exc
    return client
