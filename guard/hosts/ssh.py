"""SSH to a configured host (asyncssh): pinned host key, Guard's key from its named secret,
one command per channel, bounded in time and in output.

Only the pinned key is trusted: a host presenting another raises ``HostKeyChanged`` naming the
host (never trust on first use; ``scan`` is for ``guard host add --scan``, whose output a
person reviews). A command's output is kept up to ``output_cap`` bytes and the channel closed
past it, so a host printing 100 MB costs Guard 64 KiB; past ``command_timeout`` the channel is
closed and the step fails naming the timeout. guard-exec's refusal (exit 126) is ``refused``.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

with warnings.catch_warnings():  # asyncssh still loads DSA, which cryptography deprecates
    warnings.filterwarnings("ignore", message="DSA is deprecated")
    import asyncssh

from guard.config import Settings
from guard.config.hosts import HostSettings, secret_env
from guard.domain.exceptions import GuardError
from guard.util.textsafe import printable

__all__ = ["HostError", "HostKeyChanged", "Ran", "asyncssh", "connect", "run", "scan"]

REFUSED = 126  # guard-exec's exit status for a command not on the allowlist


class HostError(GuardError):
    """A host could not be reached or did not answer; the message names the host."""


class HostKeyChanged(HostError):
    """The host presented a key other than the pinned one: Guard refuses to connect."""


@dataclass(frozen=True)
class Ran:
    """One command's outcome on a host."""

    host: str
    argv: list[str]
    exit_status: int | None
    output: str
    cut: bool  # the output passed the cap and the rest was not read

    @property
    def refused(self) -> bool:
        return self.exit_status == REFUSED and "guard-exec: refused" in self.output

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


def host_settings(settings: Settings, name: str) -> HostSettings:
    host = settings.hosts.get(name)
    if host is None:
        known = ", ".join(sorted(settings.hosts)) or "none configured"
        raise HostError(
            f"unknown host {name!r} (hosts: {known}); add it under hosts: in the config"
        )
    return host


def private_key(settings: Settings, name: str) -> asyncssh.SSHKey:
    """Guard's key for host ``name``, from its secret: ``GUARD_SECRET_<KEY>`` or a file."""
    secret = host_settings(settings, name).key
    text = os.environ.get(secret_env(secret))
    path = Path(settings.data_dir) / "secrets" / secret
    if text is None and path.is_file():
        text = path.read_text()
    if not text:
        raise HostError(
            f"hosts.{name}.key names the secret {secret!r}, which is not set: put the private "
            f"key in {path} (mode 600) or {secret_env(secret)}"
        )
    try:
        return asyncssh.import_private_key(text)
    except (asyncssh.KeyImportError, ValueError) as exc:
        raise HostError(
            f"hosts.{name}.key: secret {secret!r} is not a private key: {exc}"
        ) from None


def pinned(name: str, host: HostSettings) -> asyncssh.SSHKey:
    if not host.host_key:
        raise HostError(
            f"hosts.{name}.host_key is empty: Guard trusts no key on first use; run "
            f"`guard host add {name} --scan`, check the key, and paste it into the config"
        )
    return asyncssh.import_public_key(host.host_key)


@asynccontextmanager
async def connect(settings: Settings, name: str) -> AsyncIterator[asyncssh.SSHClientConnection]:
    """An authenticated connection to ``name`` (through its ``jump`` host, if any)."""
    host = host_settings(settings, name)
    key = pinned(name, host)
    if host.jump is not None:
        async with (
            connect(settings, host.jump) as tunnel,
            _open(settings, name, host, key, tunnel) as conn,
        ):
            yield conn
    else:
        async with _open(settings, name, host, key, None) as conn:
            yield conn


@asynccontextmanager
async def _open(
    settings: Settings,
    name: str,
    host: HostSettings,
    key: asyncssh.SSHKey,
    tunnel: asyncssh.SSHClientConnection | None,
) -> AsyncIterator[asyncssh.SSHClientConnection]:
    where = f"host {name} ({host.address}:{host.port})"
    try:
        conn = await asyncio.wait_for(
            asyncssh.connect(
                host.address,
                host.port,
                tunnel=tunnel,
                username=host.user,
                client_keys=[private_key(settings, name)],
                known_hosts=([key], [], []),
                server_host_key_algs=[key.get_algorithm()],
                agent_path=None,
                config=[],
                connect_timeout=host.connect_timeout,
                login_timeout=host.connect_timeout,
                keepalive_interval=15,
            ),
            host.connect_timeout,
        )
    except asyncssh.HostKeyNotVerifiable:
        raise HostKeyChanged(
            f"{where} presented a host key other than hosts.{name}.host_key: refused. If the "
            f"host was rebuilt, review the new key with `guard host add {name} --scan`"
        ) from None
    except TimeoutError:
        raise HostError(f"{where} did not answer within {host.connect_timeout:g} s") from None
    except asyncssh.PermissionDenied:
        raise HostError(
            f"{where} refused Guard's key for user {host.user!r}: is the authorized_keys line "
            f"from `guard host setup {name}` installed?"
        ) from None
    except (OSError, asyncssh.Error) as exc:
        raise HostError(f"{where} unreachable: {exc}") from None
    try:
        yield conn
    finally:
        conn.close()


async def run(
    settings: Settings, name: str, argv: Sequence[str], *, within: float | None = None
) -> Ran:
    """Run ``argv`` on host ``name`` through guard-exec; output capped, time bounded."""
    host = host_settings(settings, name)
    limit = within if within is not None else host.command_timeout
    async with connect(settings, name) as conn:
        try:
            return await asyncio.wait_for(_run(conn, name, host, list(argv)), limit)
        except TimeoutError:
            raise HostError(
                f"host {name}: `{shlex.join(argv)}` did not finish within {limit:g} s "
                f"(hosts.{name}.command_timeout); the channel was closed"
            ) from None


async def _run(
    conn: asyncssh.SSHClientConnection, name: str, host: HostSettings, argv: list[str]
) -> Ran:
    proc = await conn.create_process(shlex.join(argv), encoding=None, stderr=asyncssh.STDOUT)
    chunks: list[bytes] = []
    size = 0
    cut = False
    while True:
        chunk = await proc.stdout.read(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > host.output_cap:
            cut = True
            proc.close()
            break
    status = None if cut else (await proc.wait()).exit_status
    text = printable(b"".join(chunks)[: host.output_cap].decode(errors="replace"))
    return Ran(name, argv, status, text, cut)


async def scan(address: str, port: int = 22, within: float = 10.0) -> list[str]:
    """The host keys ``address`` presents, as config lines for a person to check (no login)."""
    found: list[str] = []
    for alg in ("ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-256"):
        try:
            key = await asyncio.wait_for(
                asyncssh.get_server_host_key(address, port, server_host_key_algs=[alg], config=[]),
                within,
            )
        except (OSError, TimeoutError, asyncssh.Error):
            continue
        if key is not None:
            line = key.export_public_key("openssh").decode().split()
            found.append(" ".join(line[:2]))
    return found
