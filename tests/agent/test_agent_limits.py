"""Automation that cannot run away, and remediation that survives a crash (real engine)."""

from __future__ import annotations

import signal
import time
from datetime import datetime

import pytest

from tests.helpers.agent import (
    FAILS_AFTER_FIRST_START,
    db_rows,
    find,
    guard_process,
    incidents,
    past_flap_window,
    quick_start_home,
    scrape,
    setup_docker_home,
    show,
    tune_skill,
    wait_for,
)

pytestmark = pytest.mark.docker


def test_a_skill_that_cannot_fix_runs_at_most_the_limit_then_escalates(home, containers):
    labels = quick_start_home(home)
    # the first run sleeps; every later start exits at once: the skill cannot cure it
    crasher = containers.run("crasher", FAILS_AFTER_FIRST_START, labels=labels)
    with guard_process(home):
        crasher.kill()
        inc = wait_for(
            lambda: find(home, target=crasher.name, state="escalated"),
            90,
            "the incident to escalate",
        )
        runs = db_rows(home, "select skill, status from remediation_run")
        assert runs == [("docker-start-exited", "failed"), ("docker-start-exited", "failed")]
        blocks = db_rows(home, "select skill, target from skill_block where cleared_at is null")
        assert blocks == [("docker-start-exited", crasher.name)]
        timeline = show(home, inc["id"])["timeline"]
        assert any(t["type"] == "skill_disabled" for t in timeline)
        asked = [t for t in timeline if t["type"] == "asked_human"]
        assert asked and "disabled" in asked[-1]["message"]
        time.sleep(5)  # no loop: nothing else runs while it waits for a human
        assert len(db_rows(home, "select id from remediation_run")) == 2
        # the runs ended with the check still failing; then the breaker stopped a third
        assert scrape(home, 'guard_remediations_total{outcome="verify_failed"}') == 2
        assert scrape(home, 'guard_remediations_total{outcome="blocked"}') == 1
        assert scrape(home, 'guard_remediations_total{outcome="succeeded"}') == 0


def test_a_fault_that_keeps_coming_back_is_cured_at_most_max_runs_times_then_escalates(
    home, containers
):
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(
        home,
        "docker-start-exited",
        limits={"max_runs": 2, "window": "1h"},
        steps=[
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"verify": {"timeout": "10s", "interval": "500ms"}},
        ],
    )
    victim = containers.run("victim", "sleep 600", labels=labels)
    with guard_process(home):
        for n in (1, 2):  # the skill cures it every time...
            victim.kill()
            wait_for(
                lambda n=n: (
                    db_rows(home, "select status from remediation_run")  # type: ignore[misc]
                    == [("verified",)] * n
                ),
                60,
                f"cure number {n}",
            )
            ((cured,),) = db_rows(
                home, "select incident_id from remediation_run order by id desc limit 1"
            )
            wait_for(
                lambda i=cured: past_flap_window(home, i),  # type: ignore[misc]
                30,
                "the incident to resolve and its flap window to pass",
            )
        victim.kill()  # ...but the fault keeps coming back: the third time goes to a human
        inc = wait_for(
            lambda: find(home, target=victim.name, state="escalated"),
            60,
            "the third occurrence to escalate",
        )
        timeline = show(home, inc["id"])["timeline"]
        asked = [t for t in timeline if t["type"] == "asked_human"]
        assert asked and "already ran 2 times" in asked[-1]["message"]
        assert not [t for t in timeline if t["type"] == "step"]  # nothing ran on it
        assert db_rows(home, "select status from remediation_run") == [("verified",)] * 2
        assert db_rows(home, "select id from skill_block") == []  # it never failed
        assert len(incidents(home)) == 3
        assert scrape(home, 'guard_remediations_total{outcome="succeeded"}') == 2
        assert scrape(home, 'guard_remediations_total{outcome="rate_limited"}') == 1
    victim.reload()
    assert victim.status == "exited"


def max_overlap(intervals: list[tuple[str, str]]) -> int:
    """The most intervals open at one instant (an end sorts before a start at the same time)."""
    points = sorted(
        [(datetime.fromisoformat(a), 1) for a, _ in intervals]
        + [(datetime.fromisoformat(b), -1) for _, b in intervals]
    )
    most = now = 0
    for _at, delta in points:
        now += delta
        most = max(most, now)
    return most


def test_at_most_max_concurrent_remediations_run_at_once(home, containers):
    labels = setup_docker_home(
        home,
        skills=["docker-start-exited"],
        agent={"max_concurrent_remediations": 2, "max_concurrent_incidents": 5},
    )
    tune_skill(
        home,
        "docker-start-exited",
        steps=[  # each run holds its slot for a while
            {"wait": "3s"},
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"verify": {"timeout": "10s", "interval": "500ms"}},
        ],
    )
    victims = [containers.run(f"v{i}", "sleep 600", labels=labels) for i in range(5)]
    running_seen: set[int] = set()
    with guard_process(home):
        for v in victims:
            v.kill()

        def all_cured() -> bool:
            ((running,),) = db_rows(
                home, "select count(*) from remediation_run where status = 'running'"
            )
            running_seen.add(running)
            return db_rows(
                home, "select count(*) from remediation_run where status = 'verified'"
            ) == [(5,)]

        wait_for(all_cured, 120, "all five incidents to be cured")
    runs = db_rows(home, "select started_at, finished_at from remediation_run")
    assert len(runs) == 5
    assert max_overlap(runs) == 2  # the cap was reached, and never passed
    assert max(running_seen) <= 2
    for v in victims:
        v.reload()
        assert v.status == "running"


def test_a_restart_between_remediation_and_verification_does_not_repeat_it(
    home, containers, docker_client
):
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(
        home,
        "docker-start-exited",
        steps=[
            {"action": "docker.restart", "args": {"container": "{{ incident.target }}"}},
            {"wait": "6s"},
            {"verify": {"timeout": "10s"}},
        ],
    )
    victim = containers.run("victim", "sleep 600", labels=labels)
    with guard_process(home) as proc:
        victim.reload()
        started_before = victim.attrs["State"]["StartedAt"]
        victim.kill()
        wait_for(
            lambda: (
                db_rows(home, "select status from agent_step where kind='wait'") == [("running",)]
            ),
            60,
            "the remediation to reach its wait step",
        )
        proc.send_signal(signal.SIGKILL)  # Guard dies between the restart and verification
        proc.wait(10)
    victim.reload()
    started_by_the_skill = victim.attrs["State"]["StartedAt"]
    assert started_by_the_skill != started_before  # the skill's restart ran
    steps = db_rows(home, "select kind, status from agent_step order by id")
    assert steps == [("action", "done"), ("wait", "running"), ("verify", "pending")]
    with guard_process(home):
        inc = wait_for(
            lambda: find(home, target=victim.name, state="resolved"),
            60,
            "the resumed incident to resolve",
        )
    steps = db_rows(home, "select kind, status from agent_step order by id")
    assert steps == [("action", "done"), ("wait", "done"), ("verify", "done")]
    victim.reload()  # restarted once, not twice: the start is still the skill's own
    # (the engine's event history is a ring shared with every other test, so not asked)
    assert victim.attrs["State"]["Running"]
    assert victim.attrs["State"]["StartedAt"] == started_by_the_skill
    timeline = show(home, inc["id"])["timeline"]
    assert any(
        "docker-start-exited" in t["message"] for t in timeline if t["to_state"] == "resolved"
    )
