"""Human answers: approve a skill, deny, or reply with a fix that Guard runs, verifies and, if
it cured the incident, learns as a new skill."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loguru import logger
from sqlmodel import col, select

from guard.actions import ActionError
from guard.memory.conversation import record_message
from guard.metrics import record_remediation
from guard.notify.base import IncidentUpdate
from guard.records import utcnow
from guard.skills.model import Step
from guard.skills.writer import fix_script, literal_template
from guard.store import audit, mutes
from guard.store.db import Database
from guard.store.models import HumanCommand, Incident, IncidentState, RemediationRun
from guard.triage.states import record

if TYPE_CHECKING:
    from guard.agent.loop import Agent

S = IncidentState
ANSWERABLE = frozenset(
    {S.open.value, S.awaiting_human.value, S.escalated.value, S.diagnosing.value, S.muted.value}
)


def queue_command(
    db: Database,
    *,
    incident_id: int,
    verb: str,
    actor: str,
    channel: str = "cli",
    skill: str | None = None,
    fix: str | None = None,
) -> HumanCommand:
    """Record a human's answer for the agent (and in conversation memory and the audit log)."""
    with db.session() as session:
        if session.get(Incident, incident_id) is None:
            raise ActionError(f"no incident {incident_id} (see `guard incidents list`)")
        cmd = HumanCommand(
            incident_id=incident_id, verb=verb, actor=actor, channel=channel, skill=skill, fix=fix
        )
        session.add(cmd)
        audit.append(
            session,
            actor=actor,
            action=f"human.{verb}",
            subject=f"incident:{incident_id}",
            data={"skill": skill, "fix": fix, "channel": channel},
        )
    text = f"{verb} {skill or ''} {fix or ''}".strip()
    record_message(
        db,
        chat=channel if channel != "cli" else "console",
        direction="in",
        author=actor,
        text=text,
        incident_id=incident_id,
    )
    return cmd


def reset_interrupted(db: Database) -> int:
    """On start: settle the commands a crash left ``running`` (each later report waits on them).

    One that had already started a remedy is finished as interrupted (the remedy's run resumes on
    its own, without repeating a step); one that had not is queued again (nothing of it ran).
    Either way the incident's timeline says so. Returns how many were reset.
    """
    with db.session() as session:
        stuck = session.exec(select(HumanCommand).where(HumanCommand.status == "running")).all()
        for cmd in stuck:
            started = session.exec(
                select(RemediationRun).where(
                    RemediationRun.incident_id == cmd.incident_id,
                    col(RemediationRun.started_at) >= cmd.created_at,
                )
            ).first()
            if started is not None and cmd.verb in ("approve", "reply"):
                cmd.status, cmd.finished_at = "failed", utcnow()
                cmd.outcome = (
                    f"interrupted: Guard stopped while it ran; remediation "
                    f"{started.id} resumes without repeating a step"
                )
            else:
                cmd.status = "queued"
            session.add(cmd)
            inc = session.get(Incident, cmd.incident_id)
            if inc is not None:
                note = f"{cmd.verb} by {cmd.actor} was interrupted by a restart; " + (
                    "finished as interrupted"
                    if cmd.status == "failed"
                    else "queued again (nothing of it had run)"
                )
                record(session, inc, "command_reset", note, actor="agent", command=cmd.id)
        return len(stuck)


def _finish(agent: Agent, cmd: HumanCommand, status: str, outcome: str) -> None:
    with agent.db.session() as session:
        fresh = session.get(HumanCommand, cmd.id)
        assert fresh is not None
        fresh.status, fresh.outcome, fresh.finished_at = status, outcome, utcnow()
        session.add(fresh)
    logger.info("incident #{}: {} by {}: {}", cmd.incident_id, cmd.verb, cmd.actor, outcome)


async def process_command(agent: Agent, cmd: HumanCommand) -> None:
    inc = agent._load(cmd.incident_id)
    if inc is None or inc.state not in ANSWERABLE:
        state = inc.state if inc else "missing"
        _finish(agent, cmd, "failed", f"incident #{cmd.incident_id} is {state}; nothing to do")
        return
    try:
        if cmd.verb == "deny":
            agent._note(cmd.incident_id, "denied", f"denied by {cmd.actor}", actor_name=cmd.actor)
            agent._move(cmd.incident_id, S.escalated, f"{cmd.actor} denied the proposed remedy")
            record_remediation("denied")
            _finish(agent, cmd, "done", "denied; no remedy will run")
        elif cmd.verb == "approve":
            await _approve(agent, cmd, inc)
        elif cmd.verb == "reply":
            await apply_fix(agent, cmd, inc)
        elif cmd.verb == "mute":
            seconds = float(cmd.fix or agent.settings.telegram.mute_for)
            mutes.mute(agent.db, inc.target, seconds, cmd.actor)
            if inc.state != S.muted.value:
                agent._move(
                    cmd.incident_id,
                    S.muted,
                    f"{cmd.actor} muted {inc.target} for {seconds / 60:g} min",
                )
            agent._release(cmd.incident_id)  # muted: nothing runs for it until it reopens
            _finish(agent, cmd, "done", f"muted {inc.target} for {seconds / 60:g} min")
        else:
            _finish(agent, cmd, "failed", f"unknown verb {cmd.verb!r}")
    except Exception as exc:
        logger.opt(exception=exc).error("incident #{}: {} failed", cmd.incident_id, cmd.verb)
        _finish(agent, cmd, "failed", f"{cmd.verb} failed: {exc}")


async def _approve(agent: Agent, cmd: HumanCommand, inc: Incident) -> None:
    name = cmd.skill
    if name is None:
        candidates = agent.library.candidates(inc)
        if not candidates:
            _finish(agent, cmd, "failed", "no skill matches this incident; send a fix instead")
            return
        name = candidates[0].skill.name
    skill = agent.library.get(name)
    if skill is None or skill.spec.trust == "disabled":
        _finish(agent, cmd, "failed", f"no enabled skill named {name!r} (see `guard skills list`)")
        return
    ok = await agent.remediate(cmd.incident_id, skill, approved_by=cmd.actor)
    if ok:
        _finish(agent, cmd, "done", f"skill {name} ran and the incident is resolved")
    else:
        agent._move(cmd.incident_id, S.awaiting_human, f"approved skill {name} did not cure it")
        _finish(agent, cmd, "failed", f"skill {name} ran but did not cure the incident")


async def apply_fix(agent: Agent, cmd: HumanCommand, inc: Incident) -> None:
    """Run a human's fix in the learning loop: execute, verify, and learn only if cured."""
    fix = (cmd.fix or "").strip()
    if not fix:
        _finish(agent, cmd, "failed", "empty fix")
        return
    # The fix runs as written (no templating: its ``{{ }}`` stay literal), in the very form it
    # is saved in if it cures the incident, so the skill replays exactly what was verified.
    if agent.actions.looks_like_action(fix):
        action, args = agent.actions.parse(fix)  # raises ActionError naming the problem
        step = Step(
            action=action.name,
            args={k: literal_template(v) if isinstance(v, str) else v for k, v in args.items()},
        )
    else:
        script = fix_script(fix, inc.target, incident_id=cmd.incident_id, approver=cmd.actor)
        step = Step(
            name=f"run {fix}", run="sh -s", stdin=script, timeout=agent.settings.agent.fix_timeout
        )
    async with agent._remediations:
        inc = agent._move(cmd.incident_id, S.remediating, f"running {cmd.actor}'s fix: {fix}")
        with agent.db.session() as session:
            run = RemediationRun(
                incident_id=cmd.incident_id,
                skill="human-fix",
                target=inc.target,
                origin="human",
                approved_by=cmd.actor,
                fix=fix,
            )
            session.add(run)
        agent.runner.plan(run, [step])
        verified = await agent._execute(run, inc, None)
    outcome = agent._load(cmd.incident_id)
    text = (outcome.details.get("learned_message") if outcome else None) or (
        "verified" if verified else "did not cure it"
    )
    _finish(agent, cmd, "done" if verified else "failed", text)


async def finish_human_fix(
    agent: Agent, run: RemediationRun, inc: Incident, verified: bool, reason: str
) -> None:
    """After a human's fix ran: learn it if it cured the incident; otherwise say why not."""
    assert inc.id is not None and run.fix is not None
    if not verified:
        text = (
            f"Your fix `{run.fix}` did not cure incident #{inc.id}: {reason}. "
            "Nothing was saved; the incident is waiting for you again."
        )
        agent._move(
            inc.id,
            S.awaiting_human,
            f"{run.approved_by}'s fix did not cure it: {reason}",
            learned_message=text,
        )
        await _tell(agent, inc, "awaiting_human", text)
        return
    action: str | None = None
    args: dict[str, Any] = {}
    if agent.actions.looks_like_action(run.fix):
        parsed, args = agent.actions.parse(run.fix)
        action = parsed.name
    assert run.id is not None
    ran = next(
        (r.result["step"].get("stdin") for r in agent.runner.steps(run.id) if r.kind == "run"), None
    )
    try:
        learned = agent.writer.write(
            inc,
            run.fix,
            action=action,
            args=args,
            approver=run.approved_by or "human",
            verdict=reason,
            script=ran if action is None else None,
        )
        saved = (
            f"saved as skill {learned.name}"
            + (f" (commit {learned.commit[:10]})" if learned.commit else "")
            if not learned.existed
            else f"already known as skill {learned.name}"
        )
        detail: dict[str, Any] = {"learned_skill": learned.name, "skill_commit": learned.commit}
    except Exception as exc:
        logger.opt(exception=exc).error("could not save the learned skill")
        saved, detail = f"but saving the skill failed: {exc}", {}
    text = f"Your fix `{run.fix}` cured incident #{inc.id} (verified: {reason}); {saved}."
    agent._note(inc.id, "learned", text, **detail)
    agent._move(
        inc.id,
        S.resolved,
        f"healed by {run.approved_by}'s fix, verified; {saved}",
        learned_message=text,
        resolved_by=detail.get("learned_skill", "human-fix"),
        **detail,
    )
    done = agent._load(inc.id)
    if done is not None:
        await agent.remember(
            done, f"fix `{run.fix}` by {run.approved_by}", str(detail.get("learned_skill", ""))
        )
    agent._release(inc.id)
    await _tell(agent, inc, "resolved", text)


async def _tell(agent: Agent, inc: Incident, state: str, text: str) -> None:
    assert inc.id is not None
    try:
        await agent.notifier.update(IncidentUpdate(inc.id, inc.title, state, text))
    except Exception as exc:
        logger.error("could not tell a human about incident #{}: {}", inc.id, exc)
