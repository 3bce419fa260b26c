"""The decision policy, in process: no Docker, no subprocess, no database."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from guard.agent import policy
from guard.agent.policy import AskHuman, Limits, RunSkill, Similar, SkillHistory
from guard.skills.library import Candidate, Skill
from guard.skills.model import SkillFrontmatter, SkillSpec

pytestmark = pytest.mark.unit


@dataclass
class Inc:
    target: str = "api-1"
    id: int = 9


def skill(
    name: str,
    trust: str = "approval",
    *,
    max_runs: int = 3,
    window: float = 3600,
    description: str = "restarts it",
) -> Skill:
    spec = SkillSpec.model_validate(
        {
            "triggers": [{"kind": "container_exit"}],
            "steps": [{"run": "true"}],
            "trust": trust,
            "limits": {"max_runs": max_runs, "window": window},
        }
    )
    return Skill(
        Path("/nowhere") / name, SkillFrontmatter(name=name, description=description), "", spec
    )


def cand(name: str, score: float = 2.0, **kw: Any) -> Candidate:
    return Candidate(skill(name, **kw), score, [f"trigger: {name}"])


# -- where no shell can run --------------------------------------------------------------------

NO_SHELL = "shell steps cannot run here (no Docker engine, no cluster)"


def test_a_trusted_shell_skill_is_neither_run_nor_offered_where_no_shell_can_run() -> None:
    d = policy.decide(Inc(), [cand("restart", trust="trusted")], {}, no_shell=NO_SHELL)
    assert isinstance(d, AskHuman) and d.options == () and not d.escalate
    assert d.question == (
        f"skill restart was not run: its steps need a shell, and {NO_SHELL}. Send a fix."
    )


def test_a_skill_of_actions_still_runs_where_no_shell_can_run() -> None:
    acting = skill("restart", "trusted")
    acting.spec.steps[0] = acting.spec.steps[0].model_copy(
        update={"run": None, "action": "docker.restart"}
    )
    d = policy.decide(Inc(), [Candidate(acting, 2.0, [])], {}, no_shell=NO_SHELL)
    assert isinstance(d, RunSkill) and d.skill.name == "restart"


# -- trust levels -------------------------------------------------------------------------------


def test_a_trusted_skill_runs_unasked() -> None:
    d = policy.decide(Inc(), [cand("restart", trust="trusted")], {})
    assert isinstance(d, RunSkill) and d.skill.name == "restart"


def test_an_approval_skill_is_offered_not_run() -> None:
    d = policy.decide(Inc(), [cand("restart")], {})
    assert isinstance(d, AskHuman)
    assert [c.skill.name for c in d.options] == ["restart"]
    assert d.question == "Approve a skill, or send a fix."
    assert not d.escalate and d.guarded_by is None


def test_no_matching_skill_asks_for_a_fix() -> None:
    d = policy.decide(Inc(), [], {})
    assert isinstance(d, AskHuman) and d.options == ()
    assert d.question == "No skill matches. Send a fix."
    assert not d.escalate


def test_the_best_trusted_skill_wins_over_a_better_ranked_approval_one() -> None:
    d = policy.decide(Inc(), [cand("inspect", 5.0), cand("restart", 2.0, trust="trusted")], {})
    assert isinstance(d, RunSkill) and d.skill.name == "restart"


def test_of_two_trusted_skills_the_first_ranked_runs() -> None:
    d = policy.decide(Inc(), [cand("a", trust="trusted"), cand("b", trust="trusted")], {})
    assert isinstance(d, RunSkill) and d.skill.name == "a"


def test_approval_options_keep_the_ranking_order() -> None:
    d = policy.decide(Inc(), [cand("b", 3.0), cand("a", 2.0), cand("c", 1.0)], {})
    assert isinstance(d, AskHuman)
    assert [c.skill.name for c in d.options] == ["b", "a", "c"]


# -- rate limit ---------------------------------------------------------------------------------


def test_a_skill_under_its_rate_limit_runs() -> None:
    d = policy.decide(
        Inc(),
        [cand("restart", trust="trusted", max_runs=3)],
        {"restart": SkillHistory(runs_in_window=2)},
    )
    assert isinstance(d, RunSkill)


def test_a_skill_at_its_rate_limit_escalates_with_the_reason() -> None:
    d = policy.decide(
        Inc(),
        [cand("restart", trust="trusted", max_runs=3, window=600)],
        {"restart": SkillHistory(runs_in_window=3)},
    )
    assert isinstance(d, AskHuman)
    assert d.escalate and d.guarded_by == "rate_limited"
    assert d.options == ()  # a refused skill is not offered for approval either
    assert d.question == (
        "skill restart already ran 3 times on api-1 within 600s (limit 3). "
        "Approve a skill, or send a fix."
    )


def test_a_rate_limited_skill_falls_back_to_the_next_trusted_one() -> None:
    d = policy.decide(
        Inc(),
        [cand("restart", trust="trusted", max_runs=1), cand("recreate", trust="trusted")],
        {"restart": SkillHistory(runs_in_window=1)},
    )
    assert isinstance(d, RunSkill) and d.skill.name == "recreate"


def test_the_rate_limit_is_per_skill() -> None:
    d = policy.decide(
        Inc(),
        [cand("restart", trust="trusted", max_runs=1)],
        {"other": SkillHistory(runs_in_window=10)},
    )
    assert isinstance(d, RunSkill)


# -- circuit breaker ----------------------------------------------------------------------------


def test_a_blocked_skill_escalates_and_names_the_breaker() -> None:
    d = policy.decide(
        Inc(),
        [cand("restart", trust="trusted")],
        {"restart": SkillHistory(blocked="2 failed runs in a row (last: exit 1)")},
    )
    assert isinstance(d, AskHuman) and d.escalate and d.guarded_by == "blocked"
    assert d.question.startswith("skill restart is disabled for api-1: 2 failed runs in a row")


def test_a_demoted_trusted_skill_is_asked_for_with_the_reason() -> None:
    why = "skill restart was demoted to approval after 2 failed verifications in a row: ..."
    d = policy.decide(
        Inc(), [cand("restart", trust="trusted")], {"restart": SkillHistory(demoted=why)}
    )
    assert isinstance(d, AskHuman) and [c.skill.name for c in d.options] == ["restart"]
    assert d.question == f"{why}. Approve a skill, or send a fix." and not d.escalate


def test_blocked_wins_over_rate_limited_in_the_metric_label() -> None:
    d = policy.decide(
        Inc(),
        [cand("a", trust="trusted", max_runs=1), cand("b", trust="trusted")],
        {"a": SkillHistory(runs_in_window=1), "b": SkillHistory(blocked="x")},
    )
    assert isinstance(d, AskHuman) and d.guarded_by == "blocked"
    assert "skill a already ran 1 times" in d.question and "skill b is disabled" in d.question


def test_a_refused_skill_still_leaves_the_others_as_options() -> None:
    d = policy.decide(
        Inc(),
        [cand("restart", trust="trusted"), cand("inspect")],
        {"restart": SkillHistory(blocked="tripped")},
    )
    assert isinstance(d, AskHuman) and d.escalate
    assert [c.skill.name for c in d.options] == ["inspect"]


@pytest.mark.parametrize(("fails", "trips"), [(0, False), (1, False), (2, True), (5, True)])
def test_the_breaker_trips_at_the_configured_failures(fails: int, trips: bool) -> None:
    assert policy.breaker_trips(fails, Limits(breaker_failures=2)) is trips


def test_the_breaker_reason_names_the_count_and_the_last_failure() -> None:
    assert (
        policy.breaker_reason(2, "verify failed: HTTP 503")
        == "2 failed runs in a row (last: verify failed: HTTP 503)"
    )


# -- ranking with memory ------------------------------------------------------------------------


def test_a_skill_that_resolved_a_similar_incident_is_boosted() -> None:
    ranked = policy.rank([cand("a", 2.5), cand("b", 2.0)], [Similar(4, 0.9, skill="b")])
    assert [c.skill.name for c in ranked] == ["b", "a"]
    assert ranked[0].score == pytest.approx(2.9)
    assert ranked[0].reasons[-1] == "resolved similar incident #4 (similarity 0.90)"


def test_only_the_best_similar_incident_boosts_a_skill() -> None:
    ranked = policy.rank([cand("a", 1.0)], [Similar(4, 0.8, skill="a"), Similar(5, 0.7, "a")])
    assert ranked[0].score == pytest.approx(1.8)
    assert len(ranked[0].reasons) == 2


def test_ties_are_broken_by_name_so_the_order_is_stable() -> None:
    ranked = policy.rank([cand("zeta", 1.0), cand("alpha", 1.0)], [])
    assert [c.skill.name for c in ranked] == ["alpha", "zeta"]


def test_weak_or_self_recollections_do_not_count() -> None:
    found = [Similar(9, 0.99, "a"), Similar(3, 0.49, "a"), Similar(4, 0.5, "b")]
    assert policy.similar_only(found, incident_id=9) == [Similar(4, 0.5, "b")]


def test_a_boost_can_make_a_trusted_skill_the_choice() -> None:
    ranked = policy.rank(
        [cand("a", 3.0, trust="trusted"), cand("b", 2.5, trust="trusted")],
        [Similar(2, 0.6, skill="b")],
    )
    d = policy.decide(Inc(), ranked, {})
    assert isinstance(d, RunSkill) and d.skill.name == "b"


# -- approve picks the first option shown -------------------------------------------------------


def test_a_bare_approval_runs_the_first_option_shown() -> None:
    d = policy.decide(
        Inc(), policy.rank([cand("a", 2.0), cand("b", 1.5)], [Similar(3, 0.9, "b")]), {}
    )
    assert isinstance(d, AskHuman)
    shown = [c.skill.name for c in d.options]
    # Later, without memory the library alone would rank "a" first: the shown order wins.
    assert shown == ["b", "a"]
    assert policy.first_option(shown, [cand("a", 2.0), cand("b", 1.5)]) == "b"


def test_with_nothing_shown_a_bare_approval_takes_the_best_ranked() -> None:
    assert policy.first_option([], [cand("a", 2.0), cand("b", 1.0)]) == "a"


def test_with_nothing_shown_and_nothing_matching_there_is_no_option() -> None:
    assert policy.first_option([], []) is None


# -- escalation texts ---------------------------------------------------------------------------


def test_the_agent_failing_is_said_plainly() -> None:
    assert (
        policy.agent_failed_question(RuntimeError("sandbox image missing"))
        == "Guard's agent failed: sandbox image missing"
    )


def test_refusal_is_none_for_a_free_skill() -> None:
    assert policy.refusal(skill("a"), "api-1", SkillHistory()) is None
