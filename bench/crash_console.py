"""``bench.crash``'s console scenario: no chat channel is configured, so Guard asks on its
console (the log) through the outbox like any channel; the service recovers and the question
is closed (an edit of the console message). Guard is killed after the console wrote a message,
before the outbox recorded it. The check: the question is printed once, and no console
message is written twice (the conversation memory holds each once)."""

from __future__ import annotations

import re
from collections import Counter

from bench.crash_checks import audit_check, stuck_check, telegram_config, web_playbook
from bench.crash_run import Check, Run, Scenario

ASKED = re.compile(r"Incident #\d+ needs a human")
CLOSED = "now says:"


def console_check(run: Run) -> Check:
    """The question printed once, closed once, and no console message written twice."""
    log = run.log()
    rows = run.db("select text from conversation where direction = 'out'")
    doubled = sorted(text for text, n in Counter(t for (t,) in rows).items() if n > 1)
    seen = {"question printed": len(ASKED.findall(log)), "closed": log.count(CLOSED)}
    said = ", ".join(f"{what} {n}x" for what, n in seen.items())
    if doubled:
        return False, f"{said}; written twice: {doubled[0][:80]!r}"
    return set(seen.values()) == {1}, f"{said}, {len(rows)} console message(s), none twice"


class Console(Scenario):
    name = "console"
    what = (
        "a critical HTTP check fails, no skill and no chat channel: Guard asks on its console "
        "through the outbox; the service recovers, the incident auto-resolves and the console's "
        "question is edited to say so"
    )
    points = (
        "outbox.sent_before_id",  # the question written to the console, its id not stored
        "outbox.edited_before_mark",  # the closing edit written, its row not marked sent
    )

    def setup(self, run: Run) -> None:
        web_playbook(run, auto_resolve=True)
        (run.home.root / "skills").mkdir()
        config = telegram_config(run)
        del config["telegram"]  # no channel: the console is the channel
        run.home.write_config(config)

    def drive(self, run: Run) -> None:
        if ASKED.search(run.log()):
            run.service.healthy = True  # it recovers: the incident auto-resolves

    def done(self, run: Run) -> bool:
        resolved = any(i["state"] == "resolved" for i in run.incidents())
        return resolved and CLOSED in run.log()

    def checks(self, run: Run) -> dict[str, Check]:
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "log lines": console_check(run),  # the console's lines, each once
            "audit": audit_check(run),
        }
