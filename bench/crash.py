"""The crash matrix: SIGKILL a real ``guard run`` at each crash point, restart it, check.

Each case is a scenario (real incidents against real local services) and a crash point from
``guard.harness.crashpoints``: Guard runs with ``GUARD_CRASH_AT=<point>[:<n>]`` and kills
itself with
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
- ``mails``: every mail reached the local SMTP server once (no Message-ID twice, no content
  twice): one question, one report (``bench.crash_email``);
- ``posts``: every outbox row of Slack or Matrix was sent and its server received it exactly once
  (``bench.crash_slack``, ``bench.crash_matrix``: the local Slack, a real Synapse);
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
import sys
import time
from pathlib import Path

from bench.crash_checks import (
    audit_check,
    skills_check,
    stuck_check,
    telegram_check,
    telegram_config,
    web_playbook,
    write_learned_skill,
)
from bench.crash_console import Console
from bench.crash_correlate import Correlate
from bench.crash_demotion import Demotion
from bench.crash_email import Email
from bench.crash_escalation import Escalation
from bench.crash_hold import Hold
from bench.crash_matrix import Matrix
from bench.crash_paging import Paging
from bench.crash_report import (
    CHECKS,
    DATABASES,
    cell,
    failures,
    matrix,
    report_case,
    write_doc,
)
from bench.crash_run import (
    REPO,
    WORKING,
    Check,
    Result,
    Run,
    Scenario,
    run_case,
    services,
    stop,
    wait_for,
)
from bench.crash_scenarios import (
    SCENARIOS,
    DockerExit,
    Flap,
    HttpSkill,
    Logfile,
    Report,
    Storm,
    TelegramFix,
)
from bench.crash_slack import Slack
from bench.pg_server import fresh_database, postgres_server

__all__ = [  # the harness, as ``bench.crash`` offered it before it was split
    "CHECKS",
    "DATABASES",
    "REPO",
    "SCENARIOS",
    "WORKING",
    "Check",
    "DockerExit",
    "Flap",
    "HttpSkill",
    "Logfile",
    "Report",
    "Result",
    "Run",
    "Scenario",
    "Storm",
    "TelegramFix",
    "audit_check",
    "cases",
    "cell",
    "failures",
    "main",
    "matrix",
    "report_case",
    "run_case",
    "scenarios",
    "services",
    "skills_check",
    "stop",
    "stuck_check",
    "telegram_check",
    "telegram_config",
    "wait_for",
    "web_playbook",
    "write_doc",
    "write_learned_skill",
]


def scenarios() -> dict[str, Scenario]:
    """``SCENARIOS`` and the scenarios kept in modules of their own."""
    more: tuple[Scenario, ...] = (Correlate(), Paging(), Escalation(), Hold(), Demotion())
    more += (Email(), Slack(), Matrix(), Console())
    return {**SCENARIOS, **{s.name: s for s in more}}


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
        write_doc(args.write, args.database, table, results, argv, scenarios().values())
    return 0 if all(r.green for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
