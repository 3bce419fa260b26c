"""The crash matrix: SIGKILL a real ``guard run`` at each crash point, restart it, check.

Each case is a scenario (real incidents against real local services) and a crash point from
``guard.crashpoints``: Guard runs with ``GUARD_CRASH_AT=<point>[:<n>]`` and kills itself with
SIGKILL the n-th time it reaches the point (deterministic: no sleeping, no racing). The harness
then starts Guard again without the hook, lets the scenario finish, stops Guard and checks:

- ``lost/stuck``: every incident the scenario expects exists (none lost, none doubled) and none
  is left in a working state (diagnosing, remediating), nor a run or a human command running;
- ``remedy once``: the side effects on the victim (fix calls, container starts) happened once;
- ``skills``: at most one learned skill per fix, and the skills repo is clean (no uncommitted
  or stray files, one commit per learned skill);
- ``telegram``: at most one message per incident event (no text posted twice);
- ``pages``: a page to PagerDuty or a webhook reached it, and was acted on once (one alert per
  incident's ``dedup_key``; the webhook drops a repeated ``X-Guard-Delivery``); each escalation
  step paged its target once, each reminder recorded was posted once (``bench.crash_escalation``);
- ``log lines``: the logfile monitor counted every line exactly once;
- ``audit``: ``guard audit verify`` passes.

A case whose point the scenario never reached is reported as such (a harness bug, not green).
``--database postgres`` runs the same cases with Guard's ``database_url`` on a real local
PostgreSQL server that the harness starts (a fresh database per case).
Run: ``python -m bench.crash [--database sqlite|postgres] [--only SCENARIO[:POINT]]
[--write docs/RELIABILITY.md]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from bench.pg_server import fresh_database, postgres_server
from tests.conftest import GuardHome
from tests.telegram_helpers import ADMIN, CHAT, TOKEN, Service
from tests.telegram_server import TelegramServer

REPO = Path(__file__).resolve().parent.parent
DATABASES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
CHECKS = ("lost/stuck", "remedy once", "skills", "telegram", "pages", "log lines", "audit")
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

    def start(self, crash_at: str | None = None, *args: str) -> subprocess.Popen[bytes]:
        path = self.home.root / f"guard-{len(self.logs)}.log"
        self.logs.append(path)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
        env["GUARD_CONFIG"] = str(self.home.config)
        if crash_at:
            env["GUARD_CRASH_AT"] = crash_at
        with open(path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "guard.cli", "run", *args],
                cwd=self.home.root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
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


def stop(proc: subprocess.Popen[bytes]) -> None:
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


def telegram_config(run: Run, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "http_host": "127.0.0.1",
        "http_port": 0,
        "telegram": {
            "bot_token": TOKEN,
            "chat_id": CHAT,
            "allowed_user_ids": [ADMIN],
            "api_base_url": run.tg.url,
            "poll_timeout": "1s",
            "group_wait": "0s",
        },
        "sandbox": {"backend": "local"},
        "agent": {"verify_timeout": "5s", "poll_interval": "200ms"},
        "skills": {"git_author": "Guard Crash <guard@crash>"},
        "triage": {"flap_window": "1s"},
    }
    if run.database_url:
        # A restarted Guard is a new replica: it leads once the killed one's lease runs out
        # (10 s, not 15, to save time; at 3 s, renewed each second, a start that holds the
        # event loop for 2 s on this busy machine lapses the term and Guard exits 3).
        config |= {"database_url": run.database_url, "ha": {"lease_ttl": "10s"}}
    for key, value in extra.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


def web_playbook(run: Run, auto_resolve: bool = False) -> None:
    run.home.playbook(
        "web",
        [
            {
                "id": "web",
                "type": "http",
                "url": f"{run.service.base}/healthz",
                "every": "1s",
                "auto_resolve": auto_resolve,
            }
        ],
    )


def write_learned_skill(run: Run) -> None:
    """A skill learned earlier (trusted): POST /fix when the web check fails."""
    folder = run.home.root / "skills" / "learned-web-fix"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: learned-web-fix\ndescription: Calls the service's fix endpoint when its "
        "health check answers an error status.\nlicense: Apache-2.0\n---\n\n# learned-web-fix"
        "\n\n## When to use\n\nThe web check fails.\n\n## Procedure\n\n1. POST /fix.\n\n"
        "## Pitfalls\n\nNone.\n\n## Verification\n\nThe check passes.\n"
    )
    (folder / "skill.yaml").write_text(
        "triggers:\n  - source: http\n    kind: http_status\nsteps:\n"
        f'  - action: http.request\n    args: {{url: "{run.service.base}/fix"}}\n'
        "  - verify: {timeout: 5s, interval: 300ms}\n"
        "limits: {max_runs: 3, window: 1h}\ntrust: trusted\norigin: learned\n"
    )


def audit_check(run: Run) -> Check:
    proc = run.home.cli("audit", "verify", check=False)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()[:200]


def telegram_check(run: Run) -> Check:
    """No text posted twice: a resend after a crash must edit, not post again."""
    texts = [
        m.get("text") or m.get("caption", "")
        for m in sorted(run.tg.bot_messages(), key=lambda m: m["message_id"])
        if "photo" not in m
    ]
    doubled = sorted({t for t in texts if texts.count(t) > 1})
    if doubled:
        return False, f"posted twice: {doubled[0][:80]!r}"
    return True, f"{len(texts)} message(s), none twice"


def stuck_check(run: Run, expected: int, final: set[str]) -> Check:
    incs = [i for i in run.incidents() if i["kind"] != "storm"]
    if len(incs) != expected:
        return False, f"{len(incs)} incident(s), expected {expected}"
    bad = [f"#{i['id']} {i['state']}" for i in incs if i["state"] not in final]
    runs = run.db("select id from remediation_run where status = 'running'")
    cmds = run.db("select id from human_command where status in ('queued', 'running')")
    if bad or runs or cmds:
        return False, f"stuck: {bad} runs {runs} commands {cmds}"
    return True, ", ".join(f"#{i['id']} {i['state']}" for i in incs)


class HttpSkill(Scenario):
    name = "http-skill"
    what = "an HTTP check fails; a learned, trusted skill POSTs /fix; verified; resolved"
    points = (
        "triage.signal_stored",
        "agent.opened_not_taken",
        "agent.diagnosing",
        "step.started",
        "step.ended",
        "remedy.before_verify",
        "verify.during",
        "verify.before_state",
        "incident.resolving",
        "audit.append",
    )

    def setup(self, run: Run) -> None:
        web_playbook(run)
        write_learned_skill(run)
        run.home.write_config(telegram_config(run))

    def done(self, run: Run) -> bool:
        return any(i["state"] == "resolved" for i in run.incidents())

    def checks(self, run: Run) -> dict[str, Check]:
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "remedy once": (run.service.fixes == 1, f"{run.service.fixes} fix call(s)"),
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }


class TelegramFix(Scenario):
    name = "telegram-fix"
    what = "an HTTP check fails, no skill; Guard asks on Telegram; the admin replies with a fix"
    points = (
        "agent.asking",
        "outbox.sent_before_id",
        "command.queued",
        "command.taken",
        "step.started",
        "step.ended",
        "verify.before_state",
        "learning.files_written",
        "learning.committed",
        "incident.resolving",
    )

    def setup(self, run: Run) -> None:
        web_playbook(run)
        (run.home.root / "skills").mkdir()
        run.home.write_config(telegram_config(run))

    def drive(self, run: Run) -> None:
        # Told that the fix did not cure it (an interrupted step is not repeated), the human
        # sends it again; otherwise they answer once, by replying to the question.
        again = len(run.tg.bot_messages("did not cure"))
        if run.notes.get("replied", -1) >= again:
            return
        # The question: its buttons are gone once answered, but a reply to it still counts.
        asked = sorted(
            (m for m in run.tg.bot_messages("<b>Incident #") if "reply_to_message" not in m),
            key=lambda m: m["message_id"],
        )
        if asked:
            fix = f"http.request {run.service.base}/fix"
            run.tg.say(ADMIN, fix, chat_id=CHAT, reply_to=asked[0]["message_id"])
            run.notes["replied"] = again

    def done(self, run: Run) -> bool:
        resolved = any(i["state"] == "resolved" for i in run.incidents())
        told = run.tg.bot_messages("saved as skill") or run.tg.bot_messages("already known")
        return resolved and bool(told)

    def checks(self, run: Run) -> dict[str, Check]:
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "remedy once": (run.service.fixes == 1, f"{run.service.fixes} fix call(s)"),
            "skills": skills_check(run, 1),
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }


def skills_check(run: Run, learned: int) -> Check:
    root = run.home.root / "skills"
    found = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    if len(found) != learned:
        return False, f"skills: {found}, expected {learned}"
    git = ["git", "-C", str(root)]
    status = subprocess.run([*git, "status", "--porcelain", "--ignored"], capture_output=True)
    if status.returncode != 0 or status.stdout.strip():
        return False, f"repo not clean: {status.stdout.decode()[:120]!r}"
    log = subprocess.run([*git, "log", "--format=%s"], capture_output=True, text=True)
    commits = [ln for ln in log.stdout.splitlines() if "learn skill" in ln]
    if len(commits) != learned:
        return False, f"{len(commits)} learn commit(s), expected {learned}"
    return True, f"{found}, clean, {len(commits)} commit(s)"


class Logfile(Scenario):
    name = "logfile"
    what = "three batches of error lines appended to a watched log file"
    points: tuple[str, ...] = (
        "logfile.cursor_save:2",
        "triage.signal_stored:2",
        "audit.append:3",
        "agent.asking",
    )
    batches: tuple[int, ...] = (4, 5, 6)
    opens = 1  # incidents expected (storms aside)
    rule: ClassVar[dict[str, str]] = {"kind": "db_down", "pattern": "database unreachable"}

    def line(self, n: int) -> str:
        return f"ERROR req={uuid.uuid4()} database unreachable (line {n})\n"

    def config(self, run: Run) -> dict[str, Any]:
        return telegram_config(run)

    def setup(self, run: Run) -> None:
        log = run.home.root / "app.log"
        log.write_text("")
        run.home.playbook(
            "app",
            [
                {
                    "id": "app-log",
                    "type": "logfile",
                    "path": str(log),
                    "every": "1s",
                    "rules": [self.rule],
                }
            ],
        )
        run.home.write_config(self.config(run))
        run.notes["written"] = 0

    def counted(self, run: Run) -> int:
        return sum(i["count"] for i in run.incidents())

    def drive(self, run: Run) -> None:
        written = run.notes["written"]
        done = sum(self.batches[: run.notes.get("batch", 0)])
        if run.notes.get("batch", 0) >= len(self.batches) or self.counted(run) < done:
            return
        if "guard running" not in run.log():
            return
        n = self.batches[run.notes.get("batch", 0)]
        with open(run.home.root / "app.log", "a") as f:
            f.writelines(self.line(written + i) for i in range(n))
        run.notes["written"] = written + n
        run.notes["batch"] = run.notes.get("batch", 0) + 1

    def done(self, run: Run) -> bool:
        return (
            run.notes.get("batch", 0) == len(self.batches)
            and self.counted(run) >= run.notes["written"]
            and all(i["state"] not in WORKING | {"open"} for i in run.incidents())
        )

    def checks(self, run: Run) -> dict[str, Check]:
        counted, written = self.counted(run), run.notes["written"]
        return {
            "lost/stuck": stuck_check(run, self.opens, {"awaiting_human", "escalated"}),
            "telegram": telegram_check(run),
            "log lines": (counted == written, f"{counted} counted of {written} written"),
            "audit": audit_check(run),
        }


class Storm(Logfile):
    name = "storm"
    what = (
        "two batches of six distinct error lines (12 templates) on one log file, with "
        "max_new_incidents 2: two incidents, then all the rest folds into one storm incident"
    )
    points = (
        "triage.signal_stored:5",
        "triage.storm_fold",
        "triage.storm_fold:6",
        "agent.opened_not_taken:3",
        "outbox.sent_before_id:3",
    )
    batches = (6, 6)
    opens = 2
    rule: ClassVar[dict[str, str]] = {"kind": "app_error", "pattern": "ERROR"}
    words = (
        *("disk", "cache", "queue", "mailer", "search", "billing"),
        *("auth", "cron", "dns", "proxy", "ledger", "thumbnails"),
    )

    def line(self, n: int) -> str:
        # a different length each: distinct templates however alike the words
        return f"ERROR {self.words[n]} failed: {' '.join(self.words[: n + 1])}\n"

    def config(self, run: Run) -> dict[str, Any]:
        return telegram_config(run, triage={"max_new_incidents": 2, "storm_window": "1h"})

    def storms(self, run: Run) -> list[dict[str, Any]]:
        return [i for i in run.incidents() if i["kind"] == "storm"]

    def done(self, run: Run) -> bool:
        storms = self.storms(run)
        return (
            super().done(run)
            and len(storms) == 1
            and bool(run.tg.bot_messages(f"Incident #{storms[0]['id']}<"))
        )

    def checks(self, run: Run) -> dict[str, Check]:
        checks = super().checks(run)
        final = {"awaiting_human", "escalated"}
        storms = self.storms(run)
        if len(storms) != 1 or storms[0]["state"] not in final:
            found = [f"#{s['id']} {s['state']} x{s['count']}" for s in storms]
            checks["lost/stuck"] = (False, f"storm incidents: {found}, expected one")
        elif checks["lost/stuck"][0]:
            ok, why = checks["lost/stuck"]
            checks["lost/stuck"] = (ok, f"{why}; storm #{storms[0]['id']} x{storms[0]['count']}")
        if storms and checks["telegram"][0]:
            about = run.tg.bot_messages(f"Incident #{storms[0]['id']}<")
            if len(about) != 1:
                checks["telegram"] = (False, f"{len(about)} message(s) about the storm")
        return checks


class Flap(Scenario):
    name = "flap"
    what = "an HTTP check fails, passes, and fails again within the flap window (no agent)"
    points = ("triage.flap_reopen",)
    args = ("--no-agent",)

    def setup(self, run: Run) -> None:
        web_playbook(run, auto_resolve=True)
        run.home.write_config(telegram_config(run, triage={"flap_window": "1h"}))

    def drive(self, run: Run) -> None:
        incs = run.incidents()
        phase = run.notes.get("phase", 0)
        if phase == 0 and incs:
            run.service.healthy = True  # it passes: auto-resolved
            run.notes["phase"] = 1
        elif phase == 1 and incs and incs[0]["state"] == "resolved":
            run.service.healthy = False  # fails again: the same incident reopens
            run.notes["phase"] = 2
        elif phase == 2 and incs and "reopen" in run.log():
            pass

    def done(self, run: Run) -> bool:
        incs = run.incidents()
        if run.notes.get("phase", 0) < 2 or not incs:
            return False
        reopened = run.db("select reopen_count from incident")
        return bool(reopened) and reopened[0][0] >= 1 and incs[0]["state"] == "open"

    def checks(self, run: Run) -> dict[str, Check]:
        return {
            "lost/stuck": stuck_check(run, 1, {"open"}),
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }


class Report(Scenario):
    name = "report"
    what = "an admin asks for the daily report on Telegram (/report): text, then chart"
    points = ("report.sending", "report.sent_before_mark")
    args = ("--no-agent",)

    def setup(self, run: Run) -> None:
        run.home.write_config(telegram_config(run))

    def drive(self, run: Run) -> None:
        if not run.notes.get("asked") and "guard running" in run.log():
            time.sleep(1.0)  # the gateway polls once it runs
            run.tg.say(ADMIN, "/report", chat_id=CHAT)
            run.notes["asked"] = True

    def done(self, run: Run) -> bool:
        return bool(run.tg.bot_messages("Incidents opened:")) and bool(
            [m for m in run.tg.bot_messages() if "photo" in m]
        )

    def checks(self, run: Run) -> dict[str, Check]:
        photos = [m for m in run.tg.bot_messages() if "photo" in m]
        texts = run.tg.bot_messages("Incidents opened:")
        ok = len(texts) == 1 and len(photos) == 1
        return {
            "lost/stuck": (ok, f"{len(texts)} report(s), {len(photos)} chart(s)"),
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }


class DockerExit(Scenario):
    name = "docker-exit"
    what = (
        "a watched container exits with code 3; the built-in trusted skill docker-start-exited "
        "starts it again (each start of the victim prints a line, counted in `docker logs`)"
    )
    points = (
        "step.started",
        "step.ended",
        "remedy.before_verify",
        "verify.during",
        "verify.before_state",
        "incident.resolving",
    )

    def setup(self, run: Run) -> None:
        import shutil

        import docker

        from tests.images import ensure_busybox_image

        client = docker.from_env(timeout=60)
        image = ensure_busybox_image(client)
        label = uuid.uuid4().hex[:12]
        run.home.playbook(
            "containers",
            [
                {
                    "id": "containers",
                    "type": "docker",
                    "selector": {"label": f"guard.crash.watch={label}"},
                    "every": "1h",
                }
            ],
        )
        (run.home.root / "skills").mkdir()
        shutil.copytree(
            REPO / "skills" / "docker-start-exited",
            run.home.root / "skills" / "docker-start-exited",
        )
        run.home.write_config(telegram_config(run))
        run.notes["client"] = client
        # each start prints a line (``docker logs`` keeps every run's); /ok survives a restart
        run.notes["victim"] = client.containers.create(
            image,
            ["sh", "-c", "echo start; [ -f /ok ] && exec sleep 3600; touch /ok; sleep 2; exit 3"],
            name=f"guard-crash-victim-{label}",
            labels={"guard.crash.watch": label, "guard.test": "1"},
            network_mode="none",
            user="0",  # to write /ok in its own filesystem
        )

    def drive(self, run: Run) -> None:
        if not run.notes.get("started") and "guard running" in run.log():
            time.sleep(0.5)  # the events stream is attached
            run.notes["victim"].start()
            run.notes["started"] = True

    def starts(self, run: Run) -> int:
        with contextlib.suppress(Exception):
            return int(run.notes["victim"].logs().decode().split().count("start"))
        return 0

    def done(self, run: Run) -> bool:
        return self.starts(run) >= 2 and any(i["state"] == "resolved" for i in run.incidents())

    def teardown(self, run: Run) -> None:
        with contextlib.suppress(Exception):
            run.notes["victim"].remove(force=True)
        with contextlib.suppress(Exception):
            run.notes["client"].close()

    def checks(self, run: Run) -> dict[str, Check]:
        remedies = self.starts(run) - 1
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "remedy once": (remedies == 1, f"the victim was started {remedies} time(s) by Guard"),
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (HttpSkill(), DockerExit(), TelegramFix(), Logfile(), Storm(), Flap(), Report())
}


def scenarios() -> dict[str, Scenario]:
    """``SCENARIOS`` and the scenarios kept in modules of their own (imported here, not at the
    top: they import this module)."""
    from bench.crash_correlate import Correlate
    from bench.crash_escalation import Escalation
    from bench.crash_paging import Paging

    more = (Correlate(), Paging(), Escalation())
    return {**SCENARIOS, **{s.name: s for s in more}}


# -- a case: one scenario, one kill ----------------------------------------------------------------


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
    from tests.local_http import stop as stop_http

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


# -- the matrix ------------------------------------------------------------------------------------


def cell(result: Result, check: str) -> str:
    if check not in result.checks:
        return "-"
    ok, _ = result.checks[check]
    return "-" if ok is None else ("✅" if ok else "❌")


def matrix(results: list[Result]) -> str:
    head = "| scenario | kill point | killed | " + " | ".join(CHECKS) + " |"
    lines = [head, "|" + "---|" * (len(CHECKS) + 3)]
    for r in results:
        killed = "✅" if r.crashed else "❌ " + r.error
        cells = " | ".join(cell(r, c) for c in CHECKS)
        lines.append(f"| {r.scenario} | `{r.point}` | {killed} | {cells} |")
    return "\n".join(lines)


def failures(results: list[Result]) -> list[str]:
    out = []
    for r in results:
        for name, (ok, why) in r.checks.items():
            if ok is False:
                out.append(f"- {r.scenario} at `{r.point}`: **{name}**: {why}")
        if r.error and r.crashed:
            out.append(f"- {r.scenario} at `{r.point}`: {r.error}")
    return out


def cases(only: list[str]) -> list[tuple[Scenario, str]]:
    picked = []
    for scenario in scenarios().values():
        for point in scenario.points:
            key = f"{scenario.name}:{point.split(':')[0]}"
            if not only or any(key.startswith(o) or scenario.name == o for o in only):
                picked.append((scenario, point))
    return picked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crash", description=__doc__)
    parser.add_argument("--only", action="append", default=[], help="SCENARIO[:POINT]")
    parser.add_argument("--write", type=Path, help="write the matrix into this Markdown file")
    parser.add_argument(
        "--database",
        choices=DATABASES,
        default="sqlite",
        help="sqlite (in Guard's data folder) or postgres (a local server the harness starts)",
    )
    args = parser.parse_args(argv)
    results = []
    with contextlib.ExitStack() as stack:
        server = None
        if args.database == "postgres":
            server = stack.enter_context(postgres_server())
        for scenario, point in cases(args.only):
            started = time.monotonic()
            result = run_case(scenario, point, database_url=server and fresh_database(server))
            results.append(result)
            report_case(result, time.monotonic() - started)
    table = matrix(results)
    print(table)
    if args.write:
        argv = argv if argv is not None else sys.argv[1:]
        write_doc(args.write, args.database, table, results, argv)
    return 0 if all(r.green for r in results) else 1


def report_case(result: Result, seconds: float) -> None:
    mark = "green" if result.green else "RED"
    print(
        f"{result.scenario:14} {result.point:28} {mark:5} {seconds:5.1f}s "
        + "; ".join(f"{k}: {v[1]}" for k, v in result.checks.items() if v[0] is False)
        + (f" [{result.error}]" if result.error else ""),
        flush=True,
    )


def write_doc(
    path: Path, database: str, table: str, results: list[Result], argv: list[str]
) -> None:
    """Write the matrix between its database's markers in ``path`` (appended if absent)."""
    points = sorted({r.point.split(":")[0] for r in results})
    described = "\n".join(f"- **{s.name}**: {s.what}" for s in scenarios().values())
    fails = failures(results)
    command = "python -m bench.crash " + " ".join(argv)
    text = path.read_text() if path.exists() else ""
    marker = f"<!-- crash matrix: {database} -->"
    body = (
        f"{marker}\nProduced by `{command.strip()}` ({DATABASES[database]}), "
        f"{len(results)} cases, {len(points)} distinct kill points, "
        f"{sum(r.green for r in results)} green.\n\n"
        f"Scenarios:\n\n{described}\n\n{table}\n\n"
        + ("Red cells:\n\n" + "\n".join(fails) + "\n" if fails else "No red cell.\n")
        + f"{marker}\n"
    )
    if marker in text:
        start = text.index(marker)
        end = text.index(marker, start + 1) + len(marker) + 1
        text = text[:start] + body + text[end:]
    else:
        text = text + ("\n" if text else "") + body
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
