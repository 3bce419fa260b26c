"""``docker.inspect NAME``: a container's state, limits, memory and networks as evidence.

The starter skills ask a human to start an upstream, reconnect it or raise its memory limit;
the human should see, before approving, what the engine says: is it running, was it
OOM-killed, how often did it restart, what is its limit and its use now, which networks is it
on. One inspect and, for a running container, one one-shot stats read; nothing is changed.
Shown in the starter skills' questions: tests/skills/test_starter_memory.py,
tests/skills/test_starter_web.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard.actions.base import ActionResult
from guard.actions.docker import DockerAction

MIB = 2**20


def mib(value: Any) -> str:
    """Bytes as MiB for a human (``none`` for an unset limit)."""
    return f"{int(value) / MIB:.0f} MiB" if value else "none"


def memory_now(container: Any) -> tuple[int, int] | None:
    """(usage less inactive page cache, limit) as ``docker stats`` counts them; None when
    the container is not running or the engine gives no figure."""
    if (container.attrs.get("State") or {}).get("Status") != "running":
        return None
    stats = container.stats(stream=False, one_shot=True) or {}
    mem = stats.get("memory_stats") or {}
    usage = int(mem.get("usage") or 0)
    inner = mem.get("stats") or {}
    usage -= int(inner.get("inactive_file") or inner.get("total_inactive_file") or 0)
    return (max(usage, 0), int(mem.get("limit") or 0)) if usage else None


class Inspect(DockerAction):
    name = "docker.inspect"
    description = "a container's state, restarts, memory limit and use, and networks (evidence)"

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        attrs = container.attrs
        state = attrs.get("State") or {}
        host = attrs.get("HostConfig") or {}
        nets = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
        networks = {n: (v or {}).get("IPAddress") or "" for n, v in sorted(nets.items())}
        policy = (host.get("RestartPolicy") or {}).get("Name") or "no"
        lines = [
            f"container {container.name}: {state.get('Status')}"
            f" (exit code {state.get('ExitCode')}, OOM-killed {bool(state.get('OOMKilled'))},"
            f" restarts {attrs.get('RestartCount', 0)}, restart policy {policy})",
            f"started {state.get('StartedAt')}, finished {state.get('FinishedAt')}",
            f"memory limit: {mib(host.get('Memory'))}",
        ]
        details: dict[str, Any] = {
            "status": state.get("Status"),
            "exit_code": state.get("ExitCode"),
            "oom_killed": bool(state.get("OOMKilled")),
            "restart_count": attrs.get("RestartCount", 0),
            "memory_limit": host.get("Memory") or 0,
            "networks": sorted(networks),
        }
        if (now := memory_now(container)) is not None:
            used, limit = now
            share = f" ({100 * used / limit:.0f} %)" if limit else ""
            lines.append(f"memory now: {mib(used)} of {mib(limit)}{share}")
            details["memory_usage"] = used
        shown = ", ".join(f"{n} ({ip or 'no address'})" for n, ip in networks.items())
        lines.append(f"networks: {shown or 'none'}")
        return ActionResult(True, "\n".join(lines), details)


ACTIONS = [Inspect()]
