"""The agent's decisions as pure functions: no database, no Docker, no clock, no network.

The loop gathers the facts (matching skills, similar past incidents, each skill's history on
the target) and asks here what to do:

- ``rank`` orders the matching skills, boosting the ones that resolved similar incidents. The
  same ranking feeds the question shown to a human and ``guard approve`` with no skill named.
- ``decide`` runs the best *trusted* skill that the rate limit and the circuit breaker allow;
  otherwise it asks a human, and escalates when a runaway guard refused a skill.
- ``first_option`` is what ``guard approve N`` (and a bare approval) runs: the first option the
  human was shown, a model's proposal (``PROPOSAL``) when there is one (``options_shown``).
- ``breaker_trips`` says when failed runs in a row disable a skill for a target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from guard.skills.library import Candidate, Skill, rank_key

PROPOSAL = "proposal"
"""The option name of a model's proposed fix (shown first; a bare approval runs it)."""

SIMILAR_MIN = 0.5
"""Similarity at or above which a past incident counts as "similar" (cosine, 0..1)."""


@dataclass(frozen=True)
class Similar:
    """A past incident like this one, and the skill that resolved it (if any)."""

    incident_id: int
    score: float
    skill: str = ""
    resolution: str = ""


@dataclass(frozen=True)
class SkillHistory:
    """What the store knows about one skill on one target."""

    runs_in_window: int = 0
    """Runs started within the skill's ``limits.window``."""
    blocked: str | None = None
    """Why the circuit breaker disabled it for the target (None: it is not disabled)."""
    demoted: str | None = None
    """Why its verdicts demoted it to approval (``guard.skills.ladder``; None: they did not)."""


@dataclass(frozen=True)
class Limits:
    """The agent-wide runaway guards (a skill's own rate limit is in its spec)."""

    breaker_failures: int = 2


@dataclass(frozen=True)
class RunSkill:
    """Run a trusted skill, unasked."""

    candidate: Candidate

    @property
    def skill(self) -> Skill:
        return self.candidate.skill


Guarded = Literal["blocked", "rate_limited"]


@dataclass(frozen=True)
class AskHuman:
    """Ask a human, offering ``options`` (best first). ``escalate`` when a runaway guard
    refused a skill; ``guarded_by`` names the guard for the remediation metric."""

    options: tuple[Candidate, ...]
    question: str
    escalate: bool = False
    guarded_by: Guarded | None = None


Decision = RunSkill | AskHuman


def similar_only(found: Sequence[Similar], incident_id: int | None) -> list[Similar]:
    """The recollections that count: other incidents, similar enough."""
    return [s for s in found if s.incident_id != incident_id and s.score >= SIMILAR_MIN]


def rank(candidates: Sequence[Candidate], similar: Sequence[Similar]) -> list[Candidate]:
    """Best first: a skill that resolved a similar incident gains that similarity, with the
    reason recorded; a skill under review leads; ties go by name, so the order is stable."""
    boosted = []
    for c in candidates:
        hit = next((s for s in similar if s.skill == c.skill.name), None)
        if hit is not None:
            c = Candidate(
                c.skill,
                c.score + hit.score,
                [
                    *c.reasons,
                    f"resolved similar incident #{hit.incident_id} (similarity {hit.score:.2f})",
                ],
            )
        boosted.append(c)
    return sorted(boosted, key=rank_key)


def refusal(skill: Skill, target: str, history: SkillHistory) -> tuple[Guarded, str] | None:
    """Why a runaway guard refuses ``skill`` on ``target`` now, or None."""
    if history.blocked is not None:
        return "blocked", f"skill {skill.name} is disabled for {target}: {history.blocked}"
    limit = skill.spec.limits
    if history.runs_in_window >= limit.max_runs:
        return "rate_limited", (
            f"skill {skill.name} already ran {history.runs_in_window} times "
            f"on {target} within {limit.window:g}s (limit {limit.max_runs})"
        )
    return None


def decide(
    incident: Any,
    candidates: Sequence[Candidate],
    history: Mapping[str, SkillHistory],
    limits: Limits | None = None,
    no_shell: str = "",
) -> Decision:
    """What to do about ``incident`` (anything with a ``target``), given its ranked
    ``candidates`` and each one's ``history`` on the target (missing: never ran).
    ``no_shell`` says why shell steps cannot run here ("" when they can): a skill whose
    steps need one is neither run nor offered, and the question says why."""
    refused: list[str] = []
    unrunnable: list[str] = []
    guards: set[Guarded] = set()
    runnable: list[Candidate] = []  # what a human may still approve
    demoted: list[str] = []  # why a trusted skill must be asked for now
    for c in candidates:
        if no_shell and any(step.run is not None for step in c.skill.spec.steps):
            unrunnable.append(
                f"skill {c.skill.name} was not run: its steps need a shell, and {no_shell}"
            )
            continue
        facts = history.get(c.skill.name, SkillHistory())
        if facts.demoted is not None:
            demoted.append(facts.demoted)
        why = refusal(c.skill, incident.target, facts)
        if why is not None:
            guards.add(why[0])
            refused.append(why[1])
            continue
        if c.skill.runs_unasked and facts.demoted is None:  # trusted, not under review
            return RunSkill(c)
        runnable.append(c)
    question = ("; ".join(refused) + ". ") if refused else ""
    question += "".join(f"{d}. " for d in demoted)
    question += "".join(f"{u}. " for u in unrunnable)
    if runnable or (candidates and not unrunnable):
        question += "Approve a skill, or send a fix."
    else:
        question += "Send a fix." if candidates else "No skill matches. Send a fix."
    guarded_by: Guarded | None = None
    if guards:
        guarded_by = "blocked" if "blocked" in guards else "rate_limited"
    return AskHuman(tuple(runnable), question, escalate=bool(refused), guarded_by=guarded_by)


def options_shown(has_proposal: bool, options: Sequence[Candidate]) -> list[str]:
    """The option names a human is shown, in order: a model's proposal first, then skills."""
    return [PROPOSAL] * has_proposal + [c.skill.name for c in options]


def first_option(shown: Sequence[str], ranked: Sequence[Candidate]) -> str | None:
    """The skill a bare approval runs: the first option the human was shown; if nothing was
    shown yet, the best of ``ranked`` (None: no skill to run)."""
    if shown:
        return shown[0]
    return ranked[0].skill.name if ranked else None


def breaker_trips(consecutive_failures: int, limits: Limits) -> bool:
    """Whether this many failed runs in a row disable the skill for the target."""
    return consecutive_failures >= limits.breaker_failures


def breaker_reason(consecutive_failures: int, last_reason: str) -> str:
    return f"{consecutive_failures} failed runs in a row (last: {last_reason})"


def agent_failed_question(exc: BaseException) -> str:
    """What a human is told when the agent itself failed on an incident (it escalates)."""
    return f"Guard's agent failed: {exc}"
