"""Host actions over SSH (docs/HOSTS.md): ``host.systemctl``, ``host.journal``, ``host.df``,
``host.free``, ``host.ps``, ``host.truncate`` and ``host.run``.

Guard sends the exact words of ``guard.hosts.allowlist``; the host's guard-exec decides. Guard
checks only the shape of an argument (a unit name, a number): what a host allows is the host's
allowlist, so a refusal comes back from the host and is reported as such. The host is the
``host`` argument (``host.systemctl restart nginx.service on web1``), else the incident's
(a remote journal's signal names it), else the only configured host.
"""

from __future__ import annotations

import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.hosts import allowlist as commands
from guard.hosts.ssh import HostError, host_settings, run

_UNIT = re.compile(r"^[A-Za-z0-9@_.:\\-]+$")


def host_name(args: Mapping[str, Any], ctx: ActionContext) -> str:
    incident = ctx.incident or {}
    details = incident.get("details")
    name = args.get("host") or (details.get("host") if isinstance(details, Mapping) else None)
    hosts = sorted(ctx.settings.hosts)
    if not name and len(hosts) == 1:
        name = hosts[0]
    if not name:
        raise ActionError(
            f"which host? end the action with 'on NAME' (hosts: {', '.join(hosts) or 'none'})"
        )
    return str(name)


def _arg(args: Mapping[str, Any], key: str, action: str) -> str:
    value = args.get(key)
    if not value:
        raise ActionError(f"{action} needs {key}, e.g. '{action} {key.upper()} on web1'")
    return str(value)


class _HostAction(ABC):
    name = ""
    description = ""
    params: Sequence[str] = ("host",)

    @abstractmethod
    def argv(self, args: Mapping[str, Any], ctx: ActionContext, host: str) -> list[str]:
        """The words this action sends ``host`` (guard.hosts.allowlist)."""

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        name = host_name(args, ctx)
        try:
            host_settings(ctx.settings, name)
            argv = self.argv(args, ctx, name)
            ran = await run(ctx.settings, name, argv)
        except HostError as exc:
            raise ActionError(f"{self.name}: {exc}") from None
        details = {"host": name, "argv": argv, "exit_status": ran.exit_status, "cut": ran.cut}
        if ran.refused:
            return ActionResult(
                False,
                f"refused by host {name} (guard-exec): {ran.output.strip()}; "
                f"`guard host check {name}` says what it allows",
                {**details, "refused": True},
            )
        tail = f"\n[output cut at {len(ran.output)} bytes]" if ran.cut else ""
        status = "output cut" if ran.cut else f"exit {ran.exit_status}"
        return ActionResult(
            ran.ok,
            f"host {name}: {shlex.join(argv)} ({status})\n{ran.output.rstrip()}{tail}",
            details,
        )


class Systemctl(_HostAction):
    name = "host.systemctl"
    description = "restart|start|stop|reload|status a systemd unit on a host"
    params = ("verb", "unit", "host")

    def argv(self, args: Mapping[str, Any], ctx: ActionContext, host: str) -> list[str]:
        verb, unit = _arg(args, "verb", self.name), _arg(args, "unit", self.name)
        if verb not in commands.VERBS:
            raise ActionError(
                f"{self.name}: verb {verb!r} is not one of {', '.join(commands.VERBS)}"
            )
        if not _UNIT.match(unit):
            raise ActionError(f"{self.name}: {unit!r} is not a unit name (nginx.service)")
        return commands.systemctl(verb, unit)


class Journal(_HostAction):
    name = "host.journal"
    description = "a unit's last journal lines on a host (lines=100, since='-1h')"
    params = ("unit", "lines", "since", "host")

    def argv(self, args: Mapping[str, Any], ctx: ActionContext, host: str) -> list[str]:
        unit = _arg(args, "unit", self.name)
        lines = str(args.get("lines") or 100)
        if not lines.isdigit() or not 0 < int(lines) <= 10000:
            raise ActionError(f"{self.name}: lines must be a number from 1 to 10000, not {lines!r}")
        return commands.journal(unit, lines, args.get("since") or None)


class _Fixed(_HostAction):
    words: Sequence[str] = ()

    def argv(self, args: Mapping[str, Any], ctx: ActionContext, host: str) -> list[str]:
        return list(self.words)


class Df(_Fixed):
    name, description, words = "host.df", "disk usage of a host's filesystems", commands.DF


class Free(_Fixed):
    name, description, words = "host.free", "a host's memory (free -m)", commands.FREE


class Ps(_Fixed):
    name, description, words = "host.ps", "a host's processes, busiest first", commands.PS


class Truncate(_HostAction):
    name = "host.truncate"
    description = "empty a log file a host's allowlisted glob matches"
    params = ("path", "host")

    def argv(self, args: Mapping[str, Any], ctx: ActionContext, host: str) -> list[str]:
        return commands.truncate(_arg(args, "path", self.name))


class Run(_HostAction):
    name = "host.run"
    description = "a named command from hosts.NAME.commands, if the host allows it"
    params = ("command", "host")

    def argv(self, args: Mapping[str, Any], ctx: ActionContext, host: str) -> list[str]:
        command = _arg(args, "command", self.name)
        settings = host_settings(ctx.settings, host)
        if command not in settings.commands:
            known = ", ".join(settings.commands) or "none"
            raise ActionError(
                f"{self.name}: {command!r} is not in hosts.{host}.commands (named: {known})"
            )
        return commands.named(settings, command)


ACTIONS = [Systemctl(), Journal(), Df(), Free(), Ps(), Truncate(), Run()]


def needed(
    settings: Any, name: str, steps: Sequence[tuple[str, str, Mapping[str, Any]]]
) -> list[tuple[str, list[str]]]:
    """The argv that ``steps`` (skill, action, args) would send host ``name``: what the
    playbooks need of it, for ``guard host setup`` and ``guard host check``."""
    by_name = {a.name: a for a in ACTIONS}
    ctx = ActionContext(settings)
    found: list[tuple[str, list[str]]] = []
    for skill, action, args in steps:
        impl = by_name.get(action)
        if impl is None or "{{" in str(args):
            continue
        try:
            if host_name(args, ctx) == name:
                found.append((skill, impl.argv(args, ctx, name)))
        except (ActionError, HostError):
            continue
    return found
