"""The crash matrix's demotion scenario (``bench.crash`` registers it: ``scenarios``).

A watched container exits; the trusted skill docker-start-exited starts it, but every start
exits at once, so its verification fails twice and the skill is demoted to approval
(``skills.demote_after: 2``), the incident going to a human. Guard is SIGKILLed as each
verdict is stored (``verdict.stored``: the verdict and its ladder step are one transaction)
and between the demotion and its audit entry (``ladder.step``), then restarted: exactly two
failed runs, one demotion naming both, the chain intact, and nothing run a third time.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bench.crash_checks import audit_check, stuck_check
from bench.crash_run import Check, Run
from bench.crash_scenarios import DockerExit


class Demotion(DockerExit):
    """The scenario (``bench.crash.scenarios`` lists it): ``DockerExit``'s container and
    skill, with a start that never cures and a verification that gives up after 3 s."""

    name = "demotion"
    what = (
        "a trusted skill's fix stops working: two failed verifications demote it to approval, "
        "one demotion naming both runs, the incident with a human"
    )
    points = ("verdict.stored", "verdict.stored:2", "ladder.step")
    command = "[ -f /ran ] && exit 3; touch /ran; sleep 2; exit 3"
    container = "guard-crash-demoted"

    def tune(self, skill: Path) -> None:
        spec = yaml.safe_load((skill / "skill.yaml").read_text())
        spec["steps"] = [
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"wait": "1s"},
            {"verify": {"timeout": "3s", "interval": "500ms"}},
        ]
        (skill / "skill.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    def done(self, run: Run) -> bool:
        return any(i["state"] in ("escalated", "awaiting_human") for i in run.incidents())

    def checks(self, run: Run) -> dict[str, Check]:
        runs = run.db("select id, status from remediation_run order by id")
        failed = [r for r, status in runs if status == "failed"]
        ladder = run.db("select step, runs from skill_ladder where closed_at is null")
        audited = run.db("select action from audit_log where action = 'skill.demoted'")
        want = [("demoted", str(failed).replace(" ", ""))]
        got = [(step, str(ids).replace(" ", "")) for step, ids in ladder]
        return {
            "lost/stuck": stuck_check(run, 1, {"escalated", "awaiting_human"}),
            "two verdicts": (len(failed) == 2 and len(runs) == 2, f"runs {runs}"),
            "one demotion": (got == want and len(audited) == 1, f"{ladder}, audited {audited}"),
            "audit": audit_check(run),
        }
