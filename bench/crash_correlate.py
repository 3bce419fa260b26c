"""The crash matrix's correlation scenario (``bench.crash`` registers it: ``scenarios``).

A database's log says it is down (its incident opens), then its dependant API's log errs in
batches: every API line joins the database's incident as one related signal. A kill while a
join is being stored (``triage.correlated``) or mid-batch must neither lose a line nor join
one twice, nor open a second incident.
"""

from __future__ import annotations

import yaml

from bench.crash_checks import audit_check, stuck_check, telegram_check
from bench.crash_run import Check, Run
from bench.crash_scenarios import Logfile


class Correlate(Logfile):
    """The scenario, over ``Logfile``'s batches of lines (``bench.crash.scenarios`` lists it)."""

    name = "correlate"
    what = (
        "a database's log line opens an incident, then its dependant API's log errs in three "
        "batches: one incident, the API's lines one related signal counting each line once"
    )
    points: tuple[str, ...] = ("triage.correlated", "triage.signal_stored:4")
    batches: tuple[int, ...] = (3, 4, 5)
    rule = {"kind": "api_error", "pattern": "upstream database"}  # noqa: RUF012

    def line(self, n: int) -> str:
        return f"ERROR request {n} failed: upstream database refused the connection\n"

    def setup(self, run: Run) -> None:
        root = run.home.root
        (root / "app.log").write_text("")
        (root / "db.log").write_text("")
        book = {
            "name": "shop",
            "services": {"api": {"depends_on": ["db"]}},
            "monitors": [
                {
                    "id": "db-log",
                    "type": "logfile",
                    "service": "db",
                    "path": str(root / "db.log"),
                    "every": "1s",
                    "rules": [{"kind": "db_down", "pattern": "shut down", "severity": "critical"}],
                },
                {
                    "id": "api-log",
                    "type": "logfile",
                    "service": "api",
                    "path": str(root / "app.log"),
                    "every": "1s",
                    "rules": [self.rule],
                },
            ],
        }
        (run.home.playbooks / "shop.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
        run.home.write_config(self.config(run))
        run.notes["written"] = 0

    def counted(self, run: Run) -> int:
        rows = run.db("select count from related_signal") if run.incidents() else []
        return sum(int(r[0]) for r in rows)

    def drive(self, run: Run) -> None:
        if not run.notes.get("db_down"):
            if "guard running" in run.log():
                with open(run.home.root / "db.log", "a") as f:
                    f.write("LOG:  database system is shut down\n")
                run.notes["db_down"] = True
            return
        if run.incidents():
            super().drive(run)  # Logfile's batches

    def checks(self, run: Run) -> dict[str, Check]:
        counted, written = self.counted(run), run.notes["written"]
        related = run.db("select monitor_id from related_signal")
        return {
            "lost/stuck": stuck_check(run, 1, {"awaiting_human", "escalated"}),
            "telegram": telegram_check(run),
            "log lines": (counted == written, f"{counted} joined of {written} written"),
            "joined once": (related == [("api-log",)], f"related signals: {related}"),
            "audit": audit_check(run),
        }
