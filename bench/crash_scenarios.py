"""The crash matrix's scenarios kept here (``bench.crash.scenarios`` adds those kept in modules
of their own): a learned skill's fix, a fix sent on Telegram, a log file's lines, a storm, a
flap, the daily report, and a container that exits."""

from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from bench.crash_checks import (
    audit_check,
    skills_check,
    stuck_check,
    telegram_check,
    telegram_config,
    web_playbook,
    write_learned_skill,
)
from bench.crash_run import REPO, WORKING, Check, Run, Scenario
from tests.helpers.telegram import ADMIN, CHAT


def watch_containers(run: Run) -> tuple[Any, str, str]:
    """A docker monitor on the containers of a fresh label: (engine client, busybox, label)."""
    import docker

    from tests.helpers.images import ensure_busybox_image

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
    return client, image, label


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
    points: tuple[str, ...] = (
        "step.started",
        "step.ended",
        "remedy.before_verify",
        "verify.during",
        "verify.before_state",
        "incident.resolving",
    )

    # each start prints a line (``docker logs`` keeps every run's); /ok survives a restart
    command = "echo start; [ -f /ok ] && exec sleep 3600; touch /ok; sleep 2; exit 3"
    container = "guard-crash-victim"

    def tune(self, skill: Path) -> None:
        """Change the copied skill's folder (a scenario built on this one)."""

    def setup(self, run: Run) -> None:
        import shutil

        client, image, label = watch_containers(run)
        (run.home.root / "skills").mkdir()
        shutil.copytree(
            REPO / "skills" / "docker-start-exited",
            run.home.root / "skills" / "docker-start-exited",
        )
        self.tune(run.home.root / "skills" / "docker-start-exited")
        run.home.write_config(telegram_config(run))
        run.notes["client"] = client
        run.notes["victim"] = client.containers.create(
            image,
            ["sh", "-c", self.command],
            name=f"{self.container}-{label}",
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
