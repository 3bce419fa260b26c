"""``postgres.terminate``: end PostgreSQL sessions stuck in a state (``idle in transaction``
holding locks and connections) for longer than an age, through a connection secret.

The connection URL is never in a playbook, a skill or a message: ``secret`` names an
environment variable of Guard's that holds it (as a sandbox's secrets do), and errors never
repeat it. Sessions are chosen in one statement from ``pg_stat_activity`` joined to
``pg_roles``: a superuser's session is never terminated (it is counted and reported as
spared; asked for by ``pid``, it is refused), nor Guard's own, nor a background worker's.
Guard's role needs ``pg_signal_backend`` and ``pg_read_all_stats`` (without it another role's
session shows no state), not superuser: ``GRANT pg_signal_backend, pg_read_all_stats TO guard``.
The statement is bounded (``statement_timeout``), so is the number of sessions (``limit``).
Approval-only, like ``docker.exec``: a learned skill that uses it is saved at
``trust: approval``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from typing import Any

import psycopg

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.domain.durations import parse_duration

STATES = ("idle in transaction", "idle in transaction (aborted)", "idle", "active")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_LIMIT = 500
TIMEOUT_MS = 10_000

CHOSEN = """
SELECT a.pid, a.usename, a.datname, a.state, r.rolsuper,
       extract(epoch FROM clock_timestamp() - a.state_change)::int AS age
FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid
WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()
  AND a.state = %(state)s
  AND a.state_change <= clock_timestamp() - make_interval(secs => %(age)s)
  AND (%(database)s::text IS NULL OR a.datname = %(database)s)
  AND (%(pid)s::int IS NULL OR a.pid = %(pid)s)
ORDER BY a.state_change
"""
OWNER = """
SELECT a.usename, r.rolsuper FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid
WHERE a.pid = %(pid)s
"""
TERMINATE = f"""
SELECT s.pid, s.usename, s.datname, s.age, pg_terminate_backend(s.pid) AS ended
FROM ({CHOSEN}) s WHERE NOT s.rolsuper LIMIT %(limit)s
"""


def connection_url(name: Any) -> str:
    """The URL in Guard's environment variable ``name``; errors say which and how to set it."""
    if not name or not ENV_NAME.fullmatch(str(name)):
        raise ActionError(
            "postgres.terminate needs secret=NAME: the environment variable of Guard's that "
            "holds the connection URL (postgresql://guard:...@db:5432/app)"
        )
    if str(name).upper().startswith("GUARD_"):
        raise ActionError(f"secret {name!r} is Guard's own configuration: name the database's")
    url = os.environ.get(str(name))
    if not url:
        raise ActionError(f"secret {name} is not set: export it in Guard's environment")
    return url


def _choice(args: Mapping[str, Any]) -> dict[str, Any]:
    state = str(args.get("state") or "idle in transaction").replace("_", " ")
    if state not in STATES:
        raise ActionError(f"postgres.terminate: state must be one of {', '.join(STATES)}")
    try:
        age = parse_duration(args.get("older_than", "5m"))
        limit = int(args.get("limit", 50))
        pid = int(args["pid"]) if args.get("pid") is not None else None
    except (TypeError, ValueError) as exc:
        raise ActionError(f"postgres.terminate: {exc} (older_than=10m, limit=N, pid=N)") from None
    if age < 1 or not 1 <= limit <= MAX_LIMIT:
        raise ActionError(f"postgres.terminate: older_than >= 1s, limit 1..{MAX_LIMIT}")
    database = args.get("database")
    return {"state": state, "age": age, "limit": limit, "pid": pid, "database": database}


class Terminate:
    name = "postgres.terminate"
    description = (
        "terminate PostgreSQL sessions in a state for longer than an age (never a superuser's)"
    )
    params = ("secret", "state", "older_than")
    approval_only = True

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        url = connection_url(args.get("secret"))
        choice = _choice(args)
        try:
            return await asyncio.to_thread(self._terminate, url, choice)
        except psycopg.Error as exc:
            said = str(exc).replace(url, "<secret>").strip()
            raise ActionError(f"postgres.terminate via secret {args['secret']}: {said}") from None

    def _terminate(self, url: str, choice: dict[str, Any]) -> ActionResult:
        with psycopg.connect(
            url,
            connect_timeout=10,
            application_name="guard postgres.terminate",
            options=f"-c statement_timeout={TIMEOUT_MS}",
            autocommit=True,
        ) as conn:
            if choice["pid"] is not None:
                owner = conn.execute(OWNER, choice).fetchone()
                if owner is not None and owner[1]:
                    raise ActionError(
                        f"postgres.terminate refuses session {choice['pid']}: it is superuser "
                        f"{owner[0]}'s, and Guard never terminates a superuser's session"
                    )
            chosen = conn.execute(CHOSEN, choice).fetchall()
            spared = [(pid, user) for pid, user, _db, _st, superuser, _age in chosen if superuser]
            ended = conn.execute(TERMINATE, choice).fetchall()
        done = [
            {"pid": pid, "user": user, "database": db, "age": age}
            for pid, user, db, age, ok in ended
            if ok
        ]
        said = ", ".join(f"{d['pid']} ({d['user']}@{d['database']}, {d['age']}s)" for d in done)
        message = (
            f"terminated {len(done)} session(s) {choice['state']} for >= {choice['age']:g}s"
            + (f": {said}" if said else "")
            + (f"; spared {len(spared)} superuser session(s)" if spared else "")
        )
        return ActionResult(
            True,
            message,
            {
                "terminated": done,
                "spared_superuser": [pid for pid, _user in spared],
                "state": choice["state"],
                "older_than": choice["age"],
            },
        )


ACTIONS = [Terminate()]
