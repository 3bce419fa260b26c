"""A real PostgreSQL 15 server's own log, driven through its faults and labelled by construction.

The server is started from the distribution's binaries (``bench.pg_server``'s way) with its
default ``log_line_prefix`` (``%m [%p] ``: a timestamp with milliseconds and a zone, the pid),
``log_lock_waits``, ``log_min_duration_statement`` and ``log_temp_files`` on (common settings).
Each fault below is injected many times with varied values, in a seeded random order; after each
injection the lines the log gained are that injection's. A line's label is the fault, its
severity (``ERROR``, ``DETAIL``, ``STATEMENT``...; a line without a prefix continues the one
before) and its position among that injection's lines of that severity: lines of one fault that
say the same thing share a label whatever their values, and two faults never share one.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.pg_server import NoPostgres, postgres_bindir

Line = tuple[str, str]  # (raw line, label)
SETTINGS = {
    "log_lock_waits": "on",
    "deadlock_timeout": "200ms",
    "log_min_duration_statement": "250ms",
    "log_temp_files": "0",
    "max_connections": "12",
    "autovacuum": "off",  # nothing in the background: every line is some injection's
    "checkpoint_timeout": "1h",
}
_PREFIX = re.compile(r"^\S+ \S+ \S+ \[\d+\] (?:\S+@\S+ )?([A-Z]+):")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One PostgreSQL server in a temporary folder, its log file, and how to reach it."""

    def __init__(self, root: Path) -> None:
        bindir = postgres_bindir()
        if bindir is None:
            raise NoPostgres("no PostgreSQL server binaries (apt-get install postgresql)")
        self.root, self.port, self.log = root, _free_port(), root / "postgresql.log"
        self.as_user = ["runuser", "-u", "postgres", "--"] if _root() else []
        if self.as_user:
            shutil.chown(root, "postgres")
        self.data = root / "data"
        subprocess.run(
            [
                *self.as_user,
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "guard",
            ],
            check=True,
            capture_output=True,
        )
        options = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
        self.options = f"-p {self.port} -k {root} -c listen_addresses=127.0.0.1 {options}"
        self.pg_ctl = [*self.as_user, str(bindir / "pg_ctl"), "-D", str(self.data)]

    def start(self) -> None:
        subprocess.run(
            [*self.pg_ctl, "-w", "-l", str(self.log), "-o", self.options, "start"],
            check=True,
            capture_output=True,
        )

    def stop(self, mode: str = "fast") -> None:
        subprocess.run([*self.pg_ctl, "-m", mode, "-w", "stop"], check=False, capture_output=True)

    def restart(self, mode: str) -> None:
        self.stop(mode)
        self.start()

    def connect(self, user: str = "guard", db: str = "bench", **kw: Any) -> Any:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=user, dbname=db, autocommit=True, **kw
        )


def _root() -> bool:
    return os.geteuid() == 0


def _quiet(fn: Callable[[], Any]) -> None:
    with contextlib.suppress(Exception):
        fn()


def _run(server: Server, sql: str, *args: Any, user: str = "guard", db: str = "bench") -> None:
    def go() -> None:
        with server.connect(user, db) as conn:
            conn.execute(sql, args or None)

    _quiet(go)


def _word(r: random.Random) -> str:
    return r.choice(["alpha", "bravo", "carts", "delta", "echo", "orders", "users", "zulu"])


def _two_sessions(
    server: Server, first: list[str], second: list[str], timeout: bool = False
) -> None:
    """Two transactions, the second started while the first holds its locks."""

    def session(statements: list[str], delay: float) -> None:
        time.sleep(delay)
        options = "-c lock_timeout=100" if timeout and delay else ""

        def go() -> None:
            with server.connect(options=options) as conn, conn.transaction():
                for i, sql in enumerate(statements):
                    conn.execute(sql)
                    if i == 0 and not delay:
                        time.sleep(0.3)

        _quiet(go)

    threads = [
        threading.Thread(target=session, args=(first, 0.0)),
        threading.Thread(target=session, args=(second, 0.1)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _too_many(server: Server) -> None:
    held = []
    try:
        for _ in range(15):
            held.append(server.connect())
    except Exception:
        pass
    finally:
        for conn in held:
            conn.close()


def _terminate(server: Server, r: random.Random) -> None:
    victim = server.connect()
    pid = victim.info.backend_pid
    _run(server, "SELECT pg_terminate_backend(%s)", pid)
    _quiet(victim.close)


def _cancel(server: Server, r: random.Random) -> None:
    def sleeper() -> None:
        with server.connect(application_name="sleeper") as conn:
            conn.execute("SELECT pg_sleep(5)")

    t = threading.Thread(target=lambda: _quiet(sleeper))
    t.start()
    time.sleep(0.2)
    _run(
        server,
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'sleeper'",
    )
    t.join()


def _aborted(server: Server, r: random.Random) -> None:
    """A transaction goes on after a failed statement."""

    def go() -> None:
        with server.connect() as conn:
            conn.autocommit = False
            _quiet(lambda: conn.execute(f"SELECT no_such_function({r.randint(1, 99)})"))
            _quiet(lambda: conn.execute(f"SELECT {r.randint(1, 99)}"))

    _quiet(go)


def _eof_in_transaction(server: Server, r: random.Random) -> None:
    conn = server.connect()
    conn.autocommit = False
    conn.execute(f"UPDATE items SET note = '{_word(r)}' WHERE id = {r.randint(1, 500)}")
    os.close(conn.fileno())  # the client vanishes mid-transaction
    _quiet(conn.close)


Fault = Callable[[Server, random.Random], None]
STATEMENTS = {  # name -> (injections, the failing statement; {name}: a value of VALUES)
    "unique_violation": (60, "INSERT INTO items (id, note) VALUES ({id}, 'x')"),
    "foreign_key": (30, "INSERT INTO lines (item_id) VALUES ({missing})"),
    "not_null": (25, "INSERT INTO items (id, note) VALUES (NULL, '{word}')"),
    "check_constraint": (20, "UPDATE items SET qty = -{n} WHERE id = {id}"),
    "division_by_zero": (15, "SELECT sum(qty) / 0 FROM items WHERE id > {id}"),
    "syntax_error": (20, "SELEC id FROM {word} WHERE id = {n}"),
    "undefined_table": (40, "SELECT * FROM {word}_{n}"),
    "undefined_column": (25, "SELECT {word}_col FROM items WHERE id = {id}"),
    "invalid_integer": (20, "SELECT '{word}'::integer"),
    "value_too_long": (15, "UPDATE items SET code = '{long}' WHERE id = {id}"),
    "integer_out_of_range": (10, "SELECT {digit}000000000::integer"),
    "statement_timeout": (10, "SET statement_timeout = {ms}; SELECT pg_sleep(0.5)"),
    "slow_query": (20, "SELECT pg_sleep(0.{slow}), {n}"),
    "temp_file": (10, "SET work_mem = '64kB'; SELECT * FROM generate_series(1, {rows}) ORDER BY 1"),
    "raise_exception": (20, "SELECT reserve({order})"),
    "raise_warning": (15, "SELECT low_stock({n})"),
    "duplicate_table": (10, "CREATE TABLE items (id int)"),
    "multiline_syntax_error": (
        10,
        "SELECT id,\n       note\n  FROM items\n WHERE id = {id}\n ORDER BY",
    ),
}
VALUES: dict[str, Callable[[random.Random], object]] = {
    "id": lambda r: r.randint(1, 500),
    "n": lambda r: r.randint(1, 99),
    "word": _word,
    "missing": lambda r: r.randint(1000, 99999),
    "long": lambda r: "x" * r.randint(11, 40),
    "digit": lambda r: r.randint(3, 9),
    "ms": lambda r: r.randint(50, 90),
    "slow": lambda r: r.randint(26, 40),
    "rows": lambda r: r.randint(20000, 40000),
    "order": lambda r: r.randint(1, 99999),
}


def _statement(sql: str) -> Fault:
    return lambda s, r: _run(s, re.sub(r"\{(\w+)\}", lambda m: str(VALUES[m[1]](r)), sql))


FAULTS: dict[str, tuple[int, Fault]] = {  # name -> (injections, how)
    **{name: (n, _statement(sql)) for name, (n, sql) in STATEMENTS.items()},
    "permission_denied": (
        20,
        lambda s, r: _run(s, f"SELECT * FROM secrets WHERE id = {r.randint(1, 9)}", user="reader"),
    ),
    "role_missing": (25, lambda s, r: _run(s, "SELECT 1", user=f"{_word(r)}{r.randint(1, 99)}")),
    "database_missing": (
        15,
        lambda s, r: _run(s, "SELECT 1", db=f"{_word(r)}_db{r.randint(1, 9)}"),
    ),
    "too_many_clients": (6, lambda s, r: _too_many(s)),
    "lock_timeout": (
        8,
        lambda s, r: _two_sessions(
            s,
            ["LOCK TABLE stock IN ACCESS EXCLUSIVE MODE", "SELECT 1"],
            [f"SELECT * FROM stock WHERE id = {r.randint(1, 9)}"],
            timeout=True,
        ),
    ),
    "deadlock": (
        8,
        lambda s, r: _two_sessions(
            s,
            [
                "UPDATE stock SET qty = qty + 1 WHERE id = 1",
                "UPDATE stock SET qty = qty + 1 WHERE id = 2",
            ],
            [
                "UPDATE stock SET qty = qty - 1 WHERE id = 2",
                "UPDATE stock SET qty = qty - 1 WHERE id = 1",
            ],
        ),
    ),
    "lock_wait": (
        6,
        lambda s, r: _two_sessions(
            s,
            [f"UPDATE stock SET qty = {r.randint(1, 99)} WHERE id = 3", "SELECT pg_sleep(0.4)"],
            [f"UPDATE stock SET qty = {r.randint(1, 99)} WHERE id = 3"],
        ),
    ),
    "aborted_transaction": (10, lambda s, r: _aborted(s, r)),
    "terminate_backend": (10, _terminate),
    "cancel_query": (8, _cancel),
    "eof_in_transaction": (8, _eof_in_transaction),
    "restart": (3, lambda s, r: s.restart("fast")),
    "crash_restart": (2, lambda s, r: s.restart("immediate")),
}

_TABLES = """
CREATE TABLE items (id int PRIMARY KEY, note text NOT NULL, qty int CHECK (qty >= 0) DEFAULT 1,
                    code varchar(10));
INSERT INTO items (id, note) SELECT g, 'n' || g FROM generate_series(1, 500) g;
CREATE TABLE lines (id serial PRIMARY KEY, item_id int REFERENCES items (id));
CREATE TABLE stock (id int PRIMARY KEY, qty int);
INSERT INTO stock SELECT g, 100 FROM generate_series(1, 9) g;
CREATE TABLE secrets (id int, value text);
CREATE ROLE reader LOGIN;
CREATE FUNCTION reserve(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'order % cannot be reserved: out of stock', n; END $$;
CREATE FUNCTION low_stock(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN RAISE WARNING 'stock of item % is low', n; END $$;
"""


def _settled(log: Path, at: int) -> int:
    """The log's size once it has stopped growing (the server writes asynchronously)."""
    size, still = log.stat().st_size, 0
    while still < 3:
        time.sleep(0.03)
        now = log.stat().st_size
        still = still + 1 if now == size else 0
        size = now
    return size


# Faults whose one injection logs two different messages of one severity: which is which (the
# first pattern found in the message names the event). The server's own lifecycle (start,
# shutdown, crash recovery) is one family whichever injection started or stopped it.
SERVER = [
    "received fast shutdown",
    "received immediate shutdown",
    "aborting any active",
    "background worker",
    "shutting down",
    "checkpoint starting: shutdown",
    "checkpoint starting: end-of-recovery",
    "checkpoint complete",
    "database system is shut down",
    "starting PostgreSQL",
    "listening on IPv4",
    "listening on Unix",
    "was shut down at",
    "was interrupted",
    "not properly shut down",
    "redo starts",
    "invalid record length",
    "redo done",
    "ready to accept",
    "statement: CREATE DATABASE",
]
EVENTS: dict[str, list[str]] = {
    "lock_wait": ["still waiting", "acquired", "statement: SELECT pg_sleep", "statement: UPDATE"],
    "deadlock": [
        "still waiting",
        "detected deadlock",
        "acquired",
        "Process holding",
        r"Process \d+ waits",
        r"Process \d+: ",
    ],
    "aborted_transaction": ["function", "current transaction", "SELECT no_such", r"SELECT \d"],
}
# Messages PostgreSQL logs for more than one fault (one format string in its source): one event
# whichever injection caused them.
SHARED = {
    "lock_wait": ["still waiting", "acquired", "Process holding", "while updating tuple"],
    "row": ["Failing row contains"],
    "plpgsql": ["PL/pgSQL function"],
}
FAMILY = {"startup": "server", "restart": "server", "crash_restart": "server"}


def label_lines(fault: str, text: str) -> Iterator[Line]:
    """One injection's lines with their labels: ``family:severity[:event]``; a line without a
    prefix continues the previous line's message (a statement or a detail on many lines)."""
    family = FAMILY.get(fault, fault)
    events = SERVER if family == "server" else EVENTS.get(fault, [])
    severity, cont = "START", 0
    for line in text.splitlines():
        found = _PREFIX.match(line)
        if found is not None:
            severity = found.group(1)
        message = line[found.end() :] if found is not None else line
        shared = next(
            (
                f"{k}:{severity}:{e}"
                for k, es in SHARED.items()
                for e in es
                if re.search(e, message)
            ),
            None,
        )
        event = next((e for e in events if re.search(e, message)), "")
        if family == "server" and not event:
            raise ValueError(f"a server line no event of SERVER names: {line}")
        cont = 0 if found is not None else cont + 1
        if shared:
            yield line, shared
        elif event or not cont:
            yield line, f"{family}:{severity}:{event}"
        else:  # its own line of a statement on many lines
            yield line, f"{family}:{severity}+{cont}"


def capture(seed: int = 48) -> list[Line]:
    """Start a server, inject every fault, return the log's labelled lines."""
    r = random.Random(seed)
    order = [name for name, (n, _) in FAULTS.items() for _ in range(n)]
    r.shuffle(order)
    root = Path(tempfile.mkdtemp(prefix="guard-bench-pglog-"))
    server = Server(root)
    out: list[Line] = []
    try:
        server.start()
        with server.connect(db="postgres") as conn:
            conn.execute("CREATE DATABASE bench")
        with server.connect() as conn:
            conn.execute(_TABLES)
        at = _settled(server.log, 0)
        out += label_lines("startup", server.log.read_text()[:at])
        for name in order:
            FAULTS[name][1](server, r)
            end = _settled(server.log, at)
            with server.log.open("rb") as f:
                f.seek(at)
                out += label_lines(name, f.read(end - at).decode("utf-8", "replace"))
            at = end
    finally:
        server.stop("fast")
        shutil.rmtree(root, ignore_errors=True)
    return out
