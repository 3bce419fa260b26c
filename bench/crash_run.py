"""The crash matrix's harness (``python -m bench.crash``): a Guard home run by ``guard run``
processes, the ``Scenario`` it plays, and ``run_case``, which SIGKILLs Guard at a crash point,
restarts it, lets the scenario finish and checks it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import GuardHome
from tests.fakes.telegram import TelegramServer
from tests.helpers import cli_fork
from tests.helpers.telegram import TOKEN, Service

REPO = Path(__file__).resolve().parent.parent
WORKING = {"diagnosing", "remediating"}
Check = tuple[bool | None, str]  # None: not applicable to the scenario


def wait_for(predicate: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise TimeoutError(f"timed out waiting for {what}")


# -- one Guard home, run and crashed ---------------------------------------------------------------


@dataclass
class Run:
    """A Guard home, the services it watches, and the ``guard run`` processes it went through."""

    home: GuardHome
    tg: TelegramServer
    service: Service
    database_url: str | None = None  # None: SQLite in the home's data folder
    logs: list[Path] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def start(self, crash_at: str | None = None, *args: str) -> cli_fork.Process:
        path = self.home.root / f"guard-{len(self.logs)}.log"
        self.logs.append(path)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
        env["GUARD_CONFIG"] = str(self.home.config)
        if crash_at:
            env["GUARD_CRASH_AT"] = crash_at
        with open(path, "wb") as log:
            proc = cli_fork.spawn(["run", *args], cwd=self.home.root, env=env, out=log.fileno())
        wait_for(
            lambda: "guard running" in path.read_text(errors="replace") or proc.poll() is not None,
            60,
            "guard to start",
        )
        return proc

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.logs)

    def db(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` on Guard's database, on a connection opened for it alone."""
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        url = self.database_url or f"sqlite:///{self.home.root / 'data' / 'guard.db'}"
        engine = create_engine(url, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                return [tuple(row) for row in conn.execute(text(sql))]
        finally:
            engine.dispose()

    def incidents(self) -> list[dict[str, Any]]:
        from sqlalchemy.exc import DBAPIError

        try:
            rows = self.db("select id, state, kind, count, details from incident order by id")
        except DBAPIError:  # no table yet
            return []
        return [
            {"id": r[0], "state": r[1], "kind": r[2], "count": r[3], "details": r[4]} for r in rows
        ]


def stop(proc: cli_fork.Process) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- scenarios -------------------------------------------------------------------------------------


class Scenario:
    """Sets up a home, drives it (called every quarter second, across restarts), knows when it
    is done and what to check."""

    name = ""
    what = ""
    points: tuple[str, ...] = ()
    args: tuple[str, ...] = ()

    def setup(self, run: Run) -> None:
        raise NotImplementedError

    def drive(self, run: Run) -> None:
        pass

    def teardown(self, run: Run) -> None:
        pass

    def done(self, run: Run) -> bool:
        raise NotImplementedError

    def checks(self, run: Run) -> dict[str, Check]:
        raise NotImplementedError


@dataclass
class Result:
    scenario: str
    point: str
    crashed: bool
    checks: dict[str, Check]
    error: str = ""

    @property
    def green(self) -> bool:
        return (
            self.crashed
            and not self.error
            and all(ok is not False for ok, _ in self.checks.values())
        )


@contextlib.contextmanager
def services() -> Iterator[tuple[TelegramServer, Service]]:
    from tests.fakes.local_http import stop as stop_http

    tg = TelegramServer(TOKEN).start()
    svc = Service()
    try:
        yield tg, svc
    finally:
        stop_http(svc.server)
        tg.stop()


def run_case(
    scenario: Scenario,
    point: str | None,
    within: float = 120.0,
    database_url: str | None = None,
) -> Result:
    """Run ``scenario``, SIGKILL Guard at ``point`` (None: a control run), restart, check.
    ``database_url``: an empty database for Guard (None: SQLite in its data folder)."""
    with tempfile.TemporaryDirectory(prefix="guard-crash-") as tmp, services() as (tg, svc):
        run = Run(GuardHome(Path(tmp)), tg, svc, database_url)
        scenario.setup(run)
        crashed = point is None
        error = ""
        proc = run.start(point, *scenario.args)
        try:
            deadline = time.monotonic() + within
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    break
                scenario.drive(run)
                if point is None and scenario.done(run):
                    break
                time.sleep(0.25)
            if point is not None:
                crashed = proc.poll() == -signal.SIGKILL and "crashpoint" in run.log()
                if not crashed:
                    error = f"point {point} not reached (exit {proc.poll()})"
                stop(proc)
                proc = run.start(None, *scenario.args)  # the restart
                while time.monotonic() < deadline + within and proc.poll() is None:
                    scenario.drive(run)
                    if scenario.done(run):
                        break
                    time.sleep(0.25)
                else:
                    if proc.poll() is not None:
                        error = error or f"guard exited {proc.poll()} after the restart"
                    else:
                        error = error or "the scenario did not finish after the restart"
            time.sleep(1.0)  # let the outbox and the last notes settle
        except TimeoutError as exc:
            error = str(exc)
        finally:
            stop(proc)
        try:
            checks = scenario.checks(run)
        finally:
            scenario.teardown(run)
        result = Result(scenario.name, point or "(none)", crashed, checks, error)
        if not result.green and os.environ.get("GUARD_CRASH_VERBOSE"):
            print(run.log()[-20000:], file=sys.stderr)
        return result
