"""What every probe shares: the grant check (``probes.allow``), the connection secret
(``probes.secrets``), the time budget and the capped, redacted result.

A probe is read-only and runs in Guard's own process, so it may reach only a host the settings
name (and a port they list). A granted *name* that resolves to a local address (loopback,
link-local, unspecified) is refused unless that address or ``localhost`` is named too: a DNS
answer must not turn a grant for ``db`` into one for Guard's own loopback services. Probes
connect to the address checked here, not to a second lookup.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import ssl
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.config.probes import ProbesSettings
from guard.redact import Redactor

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class Finding:
    """What a probe saw: ``ok`` (the thing is healthy), a text for humans and the model,
    and the same facts as data."""

    ok: bool
    text: str
    details: dict[str, Any] = field(default_factory=dict)


def is_local(address: str) -> bool:
    """Whether ``address`` (an IP literal) is this machine's or its link's own."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _names_local(host: str) -> bool:
    return host in LOCAL_NAMES or (_literal(host) and is_local(host))


class Reach:
    """The probes' grants and bounds, read from ``probes:`` in the settings."""

    def __init__(self, settings: ProbesSettings, environ: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.environ = os.environ if environ is None else environ

    def check(self, probe: str, host: str, port: int | None) -> None:
        """Refuse (``ActionError``) a host or port that ``probes.allow`` does not name."""
        host = host.strip().lower().strip("[]")
        entries = [t for t in self.settings.allow if t.host == host]
        if not entries:
            raise ActionError(
                f"{probe} refused: {host} is not in probes.allow; add "
                f"{{host: {host}{f', ports: [{port}]' if port else ''}}} to the probes: section "
                "of guard.yaml to let probes reach it"
            )
        if port is not None and not any(not t.ports or port in t.ports for t in entries):
            allowed = sorted({p for t in entries for p in t.ports})
            raise ActionError(
                f"{probe} refused: port {port} of {host} is not in probes.allow (allowed: "
                f"{', '.join(map(str, allowed))}); add it to that host's ports in guard.yaml"
            )

    async def resolve(self, probe: str, host: str, port: int, budget: float) -> str:
        """The granted ``host``'s address to connect to; refused if it is local and not named
        as such. Raises ``ActionError`` when the name does not resolve."""
        self.check(probe, host, port)
        host = host.strip().lower().strip("[]")
        addresses = await lookup(host, port, budget)
        local = [a for a in addresses if is_local(a)]
        if local and not _names_local(host):
            raise ActionError(
                f"{probe} refused: {host} resolves to {local[0]}, a local address; name "
                f"{local[0]} in probes.allow to let probes reach this machine"
            )
        return addresses[0]

    def secret(self, probe: str, name: str) -> str:
        """The value of the granted connection secret ``name`` (an environment variable)."""
        if name not in self.settings.secrets:
            raise ActionError(
                f"{probe} refused: secret {name!r} is not in probes.secrets; add it there to let "
                "probes use it"
            )
        value = self.environ.get(name, "")
        if not value:
            raise ActionError(
                f"{probe}: secret {name} is not set: export it in Guard's environment"
            )
        return value

    def timeout(self, args: Mapping[str, Any]) -> float:
        """The probe's budget: ``timeout=`` if given, never more than ``probes.timeout``."""
        most = float(self.settings.timeout)
        try:
            asked = float(args.get("timeout", most))
        except (TypeError, ValueError):
            raise ActionError(f"timeout={args.get('timeout')!r}: a number of seconds") from None
        return max(0.1, min(asked, most))


async def lookup(host: str, port: int, budget: float) -> list[str]:
    """``host``'s addresses (IPv4 first); ``ActionError`` saying it does not resolve."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), budget
        )
    except TimeoutError:
        raise ActionError(f"{host} did not resolve within {budget:g}s") from None
    except socket.gaierror as exc:
        raise ActionError(f"{host} does not resolve: {exc.strerror or exc}") from None
    found = list(dict.fromkeys(str(info[4][0]) for info in infos))
    return sorted(found, key=lambda a: ":" in a)


def split_target(probe: str, target: str, default_port: int | None) -> tuple[str, int]:
    """``host:port`` (or ``[v6]:port``, or ``host`` with a default port) as host and port."""
    text = target.strip()
    if not text:
        raise ActionError(f"{probe} needs a target: host:port")
    host, port_text = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    if not port_text:
        if default_port is None:
            raise ActionError(f"{probe} {target}: give the port, e.g. {host}:5432")
        return host.lower(), default_port
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ActionError(f"{probe} {target}: the port must be a number from 1 to 65535")
    return host.lower(), int(port_text)


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    note = f"\n... ({len(text) - limit} more characters cut: probes.output_limit)"
    return text[: max(0, limit - len(note))] + note


def _scrub(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v, redactor) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, redactor) for v in value]
    return value


@dataclass(frozen=True)
class Call:
    """One probe call: its arguments, grants, redactor (register a secret before using it)
    and time budget in seconds."""

    args: Mapping[str, Any]
    reach: Reach
    redactor: Redactor
    budget: float

    def arg(self, name: str, default: str = "") -> str:
        return str(self.args.get(name) or default).strip()


async def hang_up(writer: asyncio.StreamWriter) -> None:
    """Close a connection, whatever state the peer left it in."""
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()


class Probe(ABC):
    """A read-only action: check its grant, run within its budget, return redacted, capped
    text. Subclasses implement ``look``."""

    name = "probe"
    description = ""
    params: tuple[str, ...] = ()
    default_port: int | None = None  # of a ``target`` given without one

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        reach = Reach(ctx.settings.probes)
        budget = reach.timeout(args)
        redactor = Redactor()
        started = time.monotonic()
        try:
            found = await asyncio.wait_for(self.look(Call(args, reach, redactor, budget)), budget)
        except TimeoutError:
            found = Finding(False, f"{self.name} timed out after {budget:g}s (probes.timeout)", {})
        except ActionError as exc:
            raise ActionError(redactor.redact(str(exc))) from None
        limit = ctx.settings.probes.output_limit
        details = _scrub(found.details, redactor)
        details["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
        return ActionResult(found.ok, cap(redactor.redact(found.text), limit), details)

    def reaches(self, args: Mapping[str, Any], reach: Reach) -> list[tuple[str, int | None]]:
        """The hosts (and ports) ``args`` would reach, known without the network (for
        ``guard check-config``); raises ``ActionError`` for arguments it cannot read."""
        del reach
        return [split_target(self.name, str(args.get("target") or ""), self.default_port)]

    @abstractmethod
    async def look(self, call: Call) -> Finding:
        """Probe what ``call`` asks, within its grants."""
