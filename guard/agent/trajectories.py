"""Trajectories: every incident's handling, recorded with or without a model.

A trajectory starts when the agent decides (it ran a skill, or asked a human, maybe after a
model's investigation) and is settled when the outcome is known: what the human decided,
whether the remedy verified, the skill it ran or became. Everything stored is redacted.
``guard trajectories export`` turns them into training data (``guard.llm.trajectories``).
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from guard.agent.investigation import Investigation, incident_prompt
from guard.agent.tools import TOOLS
from guard.redact import redact_value
from guard.store.db import Database
from guard.store.models import Incident, Trajectory


class TrajectoryLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    def start(
        self,
        inc: Incident,
        evidence: str,
        found: Investigation | None,
        *,
        stop_reason: str | None = None,
        skill: str | None = None,
    ) -> int:
        """Record the handling of ``inc`` so far; the trajectory's id."""
        assert inc.id is not None
        if found is not None:
            messages, model, tools = found.messages, found.model, TOOLS
            usage, stats = found.usage, found.tool_stats
            reason = found.stop_reason
        else:
            messages = [{"role": "user", "content": incident_prompt(inc, evidence)}]
            model, tools, stats, reason = None, [], {}, stop_reason or "no_model"
            usage = {
                "calls": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "total_tokens": 0,
                "wall_seconds": 0.0,
            }
        outcome = {
            "stop_reason": reason,
            "proposal": found.proposal.as_dict() if found and found.proposal else None,
            "human_decision": None,
            "verified": None,
            "skill": skill,
        }
        row = Trajectory(
            incident_id=inc.id,
            model=model,
            tools=redact_value(list(tools)),
            messages=redact_value(list(messages)),
            outcome=redact_value(outcome),
            usage=usage,
            tool_stats=stats,
        )
        with self.db.session() as session:
            session.add(row)
            session.flush()
            assert row.id is not None
            return row.id

    def settle(self, incident_id: int, **outcome: Any) -> None:
        """Merge ``outcome`` (human_decision, verified, skill) into the incident's latest
        trajectory (none: nothing to settle)."""
        with self.db.session() as session:
            row = session.exec(
                select(Trajectory)
                .where(Trajectory.incident_id == incident_id)
                .order_by(col(Trajectory.id).desc())
                .limit(1)
            ).first()
            if row is None:
                return
            row.outcome = {**row.outcome, **redact_value(outcome)}
            session.add(row)
