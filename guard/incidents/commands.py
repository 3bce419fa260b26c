"""Human answers to incidents (approve, deny, reply, mute, unmute, resolve, propose), as
``HumanCommand`` rows.

Every channel (the CLI, a chat gateway, the demo) queues them here, in Guard's process or not,
and each passes the authorisation gate here first (``guard.incidents.gate``); the agent takes
them one incident at a time and settles each with an outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from loguru import logger
from sqlmodel import Session, col, select

from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.incidents.gate import Actor, Allowed, Gate, NotAuthorised, Refused, authorise_in
from guard.incidents.lifecycle import record
from guard.memory.conversation import record_message
from guard.store import audit
from guard.store.db import Database
from guard.store.models import CommandStatus, HumanCommand, Incident, RemediationRun
from guard.store.state import get_state, put_state

VERBS = ("approve", "deny", "reply", "mute", "unmute", "resolve", "propose")


class UnknownIncident(GuardError):
    """A command names an incident that does not exist."""


def queue_command(
    db: Database,
    *,
    incident_id: int,
    verb: str,
    actor: Actor,
    gate: Gate,
    skill: str | None = None,
    fix: str | None = None,
    also: Callable[[Session], object] | None = None,
) -> HumanCommand:
    """Record a human's answer for the agent (and in conversation memory and the audit log).

    ``gate`` decides first, in the same transaction and before anything is written: a refusal
    is audited (``human.refused``) and raises ``NotAuthorised``; nothing else is written.
    ``also`` runs next in the same transaction (a chat gateway stores the update it handles
    there, and queues its acknowledgement): if it raises, nothing is queued."""
    with db.session() as session:
        incident = session.get(Incident, incident_id)
        decision = authorise_in(session, gate, actor, verb, incident_id, incident)
        if isinstance(decision, Allowed):
            if also is not None:
                also(session)
            if incident is None:
                raise UnknownIncident(f"no incident {incident_id} (see `guard incidents list`)")
            cmd = HumanCommand(
                incident_id=incident_id,
                verb=verb,
                actor=actor.name,
                channel=actor.channel,
                skill=skill,
                fix=fix,
            )
            session.add(cmd)
            audit.append(
                session,
                actor=actor.name,
                action=f"human.{verb}",
                subject=f"incident:{incident_id}",
                data={"skill": skill, "fix": fix, "channel": actor.channel, "allowed": decision.by},
            )
    if isinstance(decision, Refused):
        raise NotAuthorised(decision.reason)
    reached("command.queued")
    text = f"{verb} {skill or ''} {fix or ''}".strip()
    record_message(
        db,
        chat=actor.channel if actor.channel != "cli" else "console",
        direction="in",
        author=actor.name,
        text=text,
        incident_id=incident_id,
    )
    return cmd


def take_queued(
    db: Database, busy: Callable[[int], bool], fence: Callable[[Session], object] | None = None
) -> list[HumanCommand]:
    """Mark the oldest queued command of each incident that is not ``busy`` as running, and
    return them (the others wait their turn). ``fence`` (the leader lease's check) runs in the
    same transaction: a deposed leader's claim is rolled back."""
    taken: list[HumanCommand] = []
    with db.session() as session:
        queued = session.exec(
            select(HumanCommand)
            .where(HumanCommand.status == CommandStatus.queued)
            .order_by(col(HumanCommand.id))
        ).all()
        for cmd in queued:
            if busy(cmd.incident_id) or any(c.incident_id == cmd.incident_id for c in taken):
                continue
            cmd.status = CommandStatus.running
            session.add(cmd)
            taken.append(cmd)
        if taken and fence is not None:
            fence(session)
    return taken


def finish_command(db: Database, cmd: HumanCommand, status: CommandStatus, outcome: str) -> None:
    """Settle a command with its outcome (what ``guard approve|reply`` report back)."""
    with db.session() as session:
        fresh = session.get(HumanCommand, cmd.id)
        assert fresh is not None
        fresh.status, fresh.outcome, fresh.finished_at = status, outcome, utcnow()
        session.add(fresh)
    logger.info("incident #{}: {} by {}: {}", cmd.incident_id, cmd.verb, cmd.actor, outcome)


def reset_interrupted(db: Database) -> int:
    """On start: settle the commands a crash left ``running`` (each later report waits on them).

    One that had already started a remedy is finished as interrupted (the remedy's run resumes on
    its own, without repeating a step); one that had not is queued again (nothing of it ran).
    Either way the incident's timeline says so. Returns how many were reset.
    """
    with db.session() as session:
        stuck = session.exec(
            select(HumanCommand).where(HumanCommand.status == CommandStatus.running)
        ).all()
        for cmd in stuck:
            started = session.exec(
                select(RemediationRun).where(
                    RemediationRun.incident_id == cmd.incident_id,
                    col(RemediationRun.started_at) >= cmd.created_at,
                )
            ).first()
            if started is not None and cmd.verb in ("approve", "reply"):
                cmd.status, cmd.finished_at = CommandStatus.failed, utcnow()
                cmd.outcome = (
                    f"interrupted: Guard stopped while it ran; remediation "
                    f"{started.id} resumes without repeating a step"
                )
            else:
                cmd.status = CommandStatus.queued
            session.add(cmd)
            inc = session.get(Incident, cmd.incident_id)
            if inc is not None:
                note = f"{cmd.verb} by {cmd.actor} was interrupted by a restart; " + (
                    "finished as interrupted"
                    if cmd.status == CommandStatus.failed
                    else "queued again (nothing of it had run)"
                )
                record(session, inc, "command_reset", note, actor="agent", command=cmd.id)
        return len(stuck)


HEARTBEAT = "agent:heartbeat"


def beat(db: Database, pid: int) -> None:
    """Tell CLI processes that a running agent will pick up their commands."""
    with db.session() as session:
        put_state(session, HEARTBEAT, {"at": utcnow().isoformat(), "pid": pid})


def agent_alive(db: Database, within: float = 15.0) -> bool:
    """Whether a ``guard run`` agent has beaten its heart recently."""
    with db.session() as session:
        at = get_state(session, HEARTBEAT).get("at")
    return bool(at) and (utcnow() - datetime.fromisoformat(str(at))).total_seconds() < within
