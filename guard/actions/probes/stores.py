"""The data-store probes: ``probe.postgres`` (a fixed list of read-only queries) and
``probe.redis`` (INFO sections over RESP).

probe.postgres never runs a query it is given: it picks from ``QUERIES`` by name, in a session
that is read-only (``default_transaction_read_only``) with a ``statement_timeout``. Its
connection comes from a granted secret (a ``postgresql://`` URL in an environment variable
listed in ``probes.secrets``): a database at ``max_connections`` still admits its superusers
(``superuser_reserved_connections``), so a probe with such a role can say who holds the slots.
probe.redis sends ``AUTH`` (if its secret's URL has a password) and ``INFO`` on a raw socket:
no client library, nothing but those two commands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from guard.actions.base import ActionError
from guard.actions.probes.reach import Call, Finding, Probe, Reach, hang_up, split_target

QUERIES: dict[str, str] = {
    "connections": "SELECT coalesce(state, backend_type) AS state, usename AS user, "
    "application_name AS app, count(*) AS n FROM pg_stat_activity "
    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() "
    "GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 50",
    "locks": "SELECT l.locktype, l.mode, a.pid, pg_blocking_pids(a.pid)::text AS blocked_by, "
    "a.state, "
    "round(extract(epoch FROM now() - a.query_start)::numeric, 1) AS waiting_s, "
    "left(a.query, 120) AS query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE NOT l.granted ORDER BY a.query_start LIMIT 50",
    "replication": "SELECT client_addr::text AS replica, state, write_lag::text, "
    "flush_lag::text, replay_lag::text FROM pg_stat_replication UNION ALL "
    "SELECT 'this server (standby)', 'recovering', NULL, NULL, "
    "(now() - pg_last_xact_replay_timestamp())::text WHERE pg_is_in_recovery()",
    "sizes": "SELECT datname AS database, pg_size_pretty(pg_database_size(datname)) AS size "
    "FROM pg_database WHERE datallowconn ORDER BY pg_database_size(datname) DESC LIMIT 50",
}
SETTINGS = (
    "SELECT current_setting('max_connections'), current_setting('superuser_reserved_connections')"
)
REDIS_SECTIONS = frozenset(
    {"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "keyspace"}
)


def _table(rows: list[tuple[Any, ...]], names: list[str]) -> str:
    if not rows:
        return "  (none)"
    return "\n".join(
        "  " + ", ".join(f"{n}={'' if v is None else v}" for n, v in zip(names, row, strict=False))
        for row in rows
    )


class Postgres(Probe):
    name = "probe.postgres"
    description = (
        "read-only PostgreSQL queries from a fixed list (connections by state, locks waiting, "
        "replication lag, database sizes) through a granted secret: secret=ENV_NAME"
    )
    params = ("secret", "queries")

    def reaches(self, args: Mapping[str, Any], reach: Reach) -> list[tuple[str, int | None]]:
        parts = urlsplit(reach.secret(self.name, str(args.get("secret") or "")))
        return [(parts.hostname or "", parts.port or 5432)]

    async def look(self, call: Call) -> Finding:
        secret = call.arg("secret")
        if not secret:
            raise ActionError(
                "probe.postgres needs secret=NAME: an environment variable (listed in "
                "probes.secrets) holding a postgresql:// URL"
            )
        wanted = [q.strip() for q in str(call.args.get("queries") or ",".join(QUERIES)).split(",")]
        unknown = [q for q in wanted if q not in QUERIES]
        if unknown:
            raise ActionError(
                f"probe.postgres: unknown query {', '.join(unknown)}; one of {', '.join(QUERIES)}"
            )
        url = call.reach.secret(self.name, secret)
        call.redactor.register(secret, url)
        parts = urlsplit(url)
        if parts.password:
            call.redactor.register(secret, unquote(parts.password))
        if parts.scheme not in ("postgres", "postgresql") or not parts.hostname:
            raise ActionError(f"probe.postgres: {secret} must be a postgresql://host/... URL")
        port = parts.port or 5432
        address = await call.reach.resolve(self.name, parts.hostname, port, call.budget)
        try:
            import psycopg
        except ModuleNotFoundError:
            raise ActionError(
                "probe.postgres needs psycopg: install guard with its postgres extra "
                "(pip install 'guard[postgres]')"
            ) from None
        ms = max(100, int(call.budget * 800))
        try:
            conn = await psycopg.AsyncConnection.connect(
                url,
                hostaddr=address,
                connect_timeout=max(1, int(call.budget)),
                autocommit=True,
                options=f"-c default_transaction_read_only=on -c statement_timeout={ms}",
                application_name="guard-probe",
            )
        except psycopg.Error as exc:
            why = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            text = f"{parts.hostname}:{port}: PostgreSQL refused the connection: {why}"
            return Finding(False, text, {"connected": False, "error": why})
        sections: list[str] = []
        details: dict[str, Any] = {}
        try:
            async with conn:
                cur = await conn.execute(SETTINGS)
                limits = await cur.fetchone()
                assert limits is not None
                top, reserved = int(limits[0]), int(limits[1])
                for name in wanted:
                    cur = await conn.execute(QUERIES[name])
                    rows = await cur.fetchall()
                    names = [d.name for d in cur.description or []]
                    details[name] = [dict(zip(names, map(_plain, r), strict=False)) for r in rows]
                    head = name
                    if name == "connections":
                        used = sum(int(r[-1]) for r in rows) + 1  # and this probe's own
                        head += f" ({used} of max_connections {top}, {reserved} reserved)"
                        details["max_connections"] = top
                        details["used"] = used
                    sections.append(f"{head}:\n{_table(rows, names)}")
        except psycopg.Error as exc:
            return Finding(False, f"{parts.hostname}:{port}: query failed: {exc}", details)
        text = f"PostgreSQL {parts.hostname}:{port} (read-only)\n" + "\n".join(sections)
        return Finding(True, text, details)


def _plain(value: Any) -> Any:
    return value if isinstance(value, int | float | str | None) else str(value)


async def _command(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *words: str) -> str:
    """Send one RESP command; its reply as text (an error reply raises ``ActionError``)."""
    payload = f"*{len(words)}\r\n" + "".join(f"${len(w.encode())}\r\n{w}\r\n" for w in words)
    writer.write(payload.encode())
    await writer.drain()
    head = (await reader.readline()).decode(errors="replace").rstrip("\r\n")
    if head.startswith("-"):
        raise ActionError(f"Redis answered {words[0]}: {head[1:]}")
    if head.startswith("$"):
        size = int(head[1:])
        if size < 0:
            return ""
        data = await reader.readexactly(min(size, 1 << 20) + 2)
        return data[:-2].decode(errors="replace")
    if not head:
        raise ActionError(f"Redis closed the connection after {words[0]}")
    return head[1:]


class Redis(Probe):
    name = "probe.redis"
    description = (
        "Redis INFO (section=memory by default; clients, stats, replication, keyspace, ...) "
        "from host:port, or through a granted secret=ENV_NAME holding a redis:// URL"
    )
    params = ("target", "section")
    default_port = 6379

    def reaches(self, args: Mapping[str, Any], reach: Reach) -> list[tuple[str, int | None]]:
        if secret := str(args.get("secret") or ""):
            parts = urlsplit(reach.secret(self.name, secret))
            return [(parts.hostname or "", parts.port or 6379)]
        return super().reaches(args, reach)

    async def look(self, call: Call) -> Finding:
        password = ""
        if secret := call.arg("secret"):
            url = call.reach.secret(self.name, secret)
            call.redactor.register(secret, url)
            parts = urlsplit(url)
            if parts.scheme != "redis" or not parts.hostname:
                raise ActionError(
                    f"probe.redis: {secret} must be a redis://host:port URL (rediss://, "
                    "Redis over TLS, is not spoken yet)"
                )
            password = unquote(parts.password or "")
            call.redactor.register(secret, password)
            host, port = parts.hostname, parts.port or 6379
        else:
            host, port = split_target(self.name, call.arg("target"), 6379)
        section = str(call.args.get("section") or "memory").lower()
        if section not in REDIS_SECTIONS:
            raise ActionError(
                f"probe.redis: section {section!r} is not one of "
                f"{', '.join(sorted(REDIS_SECTIONS))}"
            )
        address = await call.reach.resolve(self.name, host, port, call.budget)
        try:
            reader, writer = await asyncio.open_connection(address, port)
        except OSError as exc:
            return Finding(False, f"{host}:{port} refused: {exc.strerror or exc}", {})
        try:
            if password:
                user = unquote(urlsplit(url).username or "")
                await _command(reader, writer, "AUTH", *([user] if user else []), password)
            info = await _command(reader, writer, "INFO", section)
        except (ActionError, OSError, asyncio.IncompleteReadError) as exc:
            return Finding(False, f"{host}:{port}: {exc}", {"section": section})
        finally:
            await hang_up(writer)
        fields = dict(
            line.split(":", 1) for line in info.splitlines() if ":" in line and line[0] != "#"
        )
        text = f"Redis {host}:{port} INFO {section}\n{info.strip()}"
        ok = True
        if section == "memory" and fields.get("maxmemory", "0") not in ("0", ""):
            share = int(fields.get("used_memory", "0")) / int(fields["maxmemory"])
            fields["used_of_maxmemory"] = f"{share:.0%}"
            text = (
                f"Redis {host}:{port}: used_memory {fields.get('used_memory_human')} of "
                f"maxmemory {fields.get('maxmemory_human')} ({share:.0%}, policy "
                f"{fields.get('maxmemory_policy')})\n{info.strip()}"
            )
            ok = share < 0.9
        return Finding(ok, text, {"section": section, "info": fields})


ACTIONS = [Postgres(), Redis()]
