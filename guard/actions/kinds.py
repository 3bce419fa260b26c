"""Action families: one entry per prefix (``docker.``, ``http.``, ``railway.``, ``k8s.``,
``probe.``, ``host.``, ``mcp.``, ``compose.``, ``postgres.``, ``disk.``) says where its actions
are, and whether they only read (probes: evidence, never a remedy). A family's module (and its
client: the Docker SDK, the Kubernetes client, psycopg, asyncssh) is imported only when one of
its actions is first asked for. ``ActionRegistry`` reads
this table; a human's fix is an action when it starts with one of its prefixes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from guard.actions.base import Action


@dataclass(frozen=True)
class ActionFamily:
    """One family: its prefix and how to load its actions."""

    prefix: str
    load: Callable[[], Sequence[Action]]
    read_only: bool = False  # evidence only (probes): never a remedy, never learned as one


def _docker() -> Sequence[Action]:
    from guard.actions import docker, docker_inspect, docker_ops, docker_rollback

    return [*docker.ACTIONS, *docker_ops.ACTIONS, *docker_rollback.ACTIONS, *docker_inspect.ACTIONS]


def _http() -> Sequence[Action]:
    from guard.actions.http import ACTIONS

    return ACTIONS


def _railway() -> Sequence[Action]:
    from guard.actions import railway, railway_logs

    return [*railway.ACTIONS, *railway_logs.ACTIONS]


def _probes() -> Sequence[Action]:
    from guard.actions.probes import ACTIONS

    return ACTIONS


def _host() -> Sequence[Action]:
    from guard.actions.host import ACTIONS

    return ACTIONS


def _mcp() -> Sequence[Action]:
    from guard.actions.mcp import ACTIONS

    return ACTIONS


def _kubernetes() -> Sequence[Action]:
    from guard.actions import kubernetes, kubernetes_events

    return [*kubernetes.ACTIONS, *kubernetes_events.ACTIONS]


def _compose() -> Sequence[Action]:
    from guard.actions.compose import ACTIONS

    return ACTIONS


def _postgres() -> Sequence[Action]:
    from guard.actions.postgres import ACTIONS

    return ACTIONS


def _disk() -> Sequence[Action]:
    from guard.actions.disk import ACTIONS

    return ACTIONS


ACTION_FAMILIES: dict[str, ActionFamily] = {
    f.prefix: f
    for f in (
        ActionFamily("docker", _docker),
        ActionFamily("http", _http),
        ActionFamily("railway", _railway),
        ActionFamily("k8s", _kubernetes),
        ActionFamily("probe", _probes, read_only=True),
        ActionFamily("host", _host),
        ActionFamily("mcp", _mcp),
        ActionFamily("compose", _compose),
        ActionFamily("postgres", _postgres),
        ActionFamily("disk", _disk),
    )
}
