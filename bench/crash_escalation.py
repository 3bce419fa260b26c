"""The crash matrix's escalation scenario (``bench.crash`` runs it with the others).

An HTTP check fails and no skill is known, so Guard asks on Telegram and nobody answers: the
escalation steps page ``pagerduty:secondary`` (after 1 s) and then ``pagerduty:tertiary`` (after
3 s) on the local PagerDuty Events API v2 server, and a reminder is posted in the question's
thread every 2 s. Guard is killed while a step or a reminder is being recorded, or just after a
step was committed and before its page was delivered; after the restart each step has paged its
target exactly once (none lost, none repeated) and every reminder recorded was posted once
(or, recorded just before the run's final stop, is still queued in the outbox: not lost).
"""

from __future__ import annotations

from bench.crash_checks import (
    audit_check,
    stuck_check,
    telegram_check,
    telegram_config,
    web_playbook,
)
from bench.crash_run import Check, Run, Scenario
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer

SECONDARY, TERTIARY = ROUTING_KEY[::-1], ROUTING_KEY.upper()


class Escalation(Scenario):
    name = "escalation"
    what = "nobody answers a question: two escalation steps page PagerDuty, reminders repeat it"
    points = (
        "escalation.step_recorded",
        "escalation.step_recorded:2",
        "escalation.step_committed",
        "escalation.reminder_recorded",
    )

    def setup(self, run: Run) -> None:
        pd = PagerDutyServer().start()
        run.notes["pd"] = pd
        web_playbook(run)
        (run.home.root / "skills").mkdir()
        keys = {"secondary": SECONDARY, "tertiary": TERTIARY}
        run.home.write_config(
            telegram_config(
                run,
                notifiers={
                    "pagerduty": {n: {"routing_key": k, "url": pd.url} for n, k in keys.items()}
                },
                escalation={
                    "remind_every": "2s",
                    "check_every": "300ms",
                    "steps": [
                        {"after": "1s", "notify": ["pagerduty:secondary"]},
                        {"after": "3s", "notify": ["pagerduty:tertiary"]},
                    ],
                },
            )
        )

    def teardown(self, run: Run) -> None:
        run.notes["pd"].stop()

    def triggers(self, run: Run) -> list[str]:
        pd: PagerDutyServer = run.notes["pd"]
        return [e["routing_key"] for e in pd.events if e["event_action"] == "trigger"]

    def reminders(self, run: Run) -> tuple[int, int]:
        """(reminders recorded, reminders posted)."""
        rows = run.db("select count(*) from escalation_fired where kind = 'reminder'")
        return int(rows[0][0]), len(run.tg.bot_messages("Reminder: incident"))

    def reminders_waiting(self, run: Run) -> int:
        """Reminders recorded and queued, not posted yet: the stop at the end of a run can
        come between the two; the outbox posts them at the next start (not lost)."""
        rows = run.db(
            "select count(*) from outbox where text like 'Reminder: incident%' "
            "and status in ('pending', 'in_flight')"
        )
        return int(rows[0][0])

    def done(self, run: Run) -> bool:
        try:
            recorded, posted = self.reminders(run)
        except Exception:  # no table yet
            return False
        return TERTIARY in self.triggers(run) and recorded >= 2 and posted >= recorded

    def checks(self, run: Run) -> dict[str, Check]:
        got = self.triggers(run)
        steps = run.db("select number from escalation_fired where kind = 'step' order by number")
        once = got.count(SECONDARY) == 1 and got.count(TERTIARY) == 1
        recorded, posted = self.reminders(run)
        waiting = self.reminders_waiting(run)
        pages: Check = (
            once and [s[0] for s in steps] == [0, 1] and recorded == posted + waiting,
            f"step pages: {got.count(SECONDARY)} + {got.count(TERTIARY)}; "
            f"reminders {posted} posted and {waiting} queued of {recorded} recorded",
        )
        return {
            "lost/stuck": stuck_check(run, 1, {"awaiting_human", "escalated"}),
            "pages": pages,
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }


__all__ = ["Escalation"]
