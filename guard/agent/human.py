"""Human answers as inputs to the agent: approve a skill, deny, mute, unmute, resolve, or reply
with a fix that
Guard runs, verifies and, if it cured the incident, learns as a new skill; and ``propose`` (an
MCP client's ``propose_remedy``): a fix offered to the humans as a new first option, with its
digest, exactly as a model's proposal is; nothing runs until one approves it.

Commands arrive through ``guard.incidents.commands`` (the CLI and each channel queue them); the
agent hands each to ``HumanAnswers.process`` in the incident's worker, so an answer never races
the agent's own work on the same incident.
"""

from __future__ import annotations

import asyncio
import json

from loguru import logger

from guard.actions import ActionRegistry
from guard.agent import policy
from guard.agent.asking import Asker
from guard.agent.probing import Prober
from guard.agent.recall import Recaller
from guard.agent.remediation import Remediator
from guard.agent.tools import Proposal
from guard.config import Settings
from guard.domain.durations import format_duration
from guard.harness.crashpoints import reached
from guard.incidents.commands import finish_command
from guard.incidents.lifecycle import ANSWERABLE, Lifecycle
from guard.skills.lesson import fix_script, literal_template
from guard.skills.library import Candidate, SkillLibrary
from guard.skills.model import Step
from guard.store import mutes
from guard.store.db import Database
from guard.store.models import CommandStatus, HumanCommand, Incident, IncidentState
from guard.telemetry.metrics import record_remediation
from guard.util.commandtext import digest, oddities, short

S = IncidentState
Done, Failed = CommandStatus.done, CommandStatus.failed


def fix_step(
    actions: ActionRegistry, fix: str, inc: Incident, *, actor: str, timeout: float
) -> Step:
    """A human's fix as the one step that runs it, as written (no templating: its ``{{ }}``
    stay literal), in the very form it is saved in if it cures the incident, so the skill
    replays exactly what was verified. Raises ``ActionError`` naming a malformed action."""
    assert inc.id is not None
    if actions.looks_like_action(fix):
        action, args = actions.parse(fix)
        return Step(
            action=action.name,
            args={k: literal_template(v) if isinstance(v, str) else v for k, v in args.items()},
        )
    script = fix_script(fix, inc.target, incident_id=inc.id, approver=actor)
    return Step(name=f"run {fix}", run="sh -s", stdin=script, timeout=timeout)


def deny_outcome(incident_id: int) -> str:
    """What a denial answers: no remedy runs, and how to end the incident instead."""
    return (
        f"denied; no remedy will run. Incident #{incident_id} stays escalated until it ends "
        f"by itself; close it with `guard resolve {incident_id}`, or `guard mute "
        f"{incident_id} --for 1h` to stop hearing about it"
    )


class HumanAnswers:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        lifecycle: Lifecycle,
        remediator: Remediator,
        recaller: Recaller,
        library: SkillLibrary,
        actions: ActionRegistry,
        *,
        mute_for: float,
        asker: Asker | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.lifecycle = lifecycle
        self.remediator = remediator
        self.recaller = recaller
        self.library = library
        self.actions = actions
        self.mute_for = mute_for  # seconds a mute lasts when the command names none
        self.asker = asker  # asks again with a proposal (``propose``)
        self.prober = Prober(lifecycle, remediator.runner, actions)  # a probe: evidence only

    def finish(self, cmd: HumanCommand, status: CommandStatus, outcome: str) -> None:
        finish_command(self.db, cmd, status, outcome)

    async def process(self, cmd: HumanCommand) -> None:
        reached("command.taken")
        inc = self.lifecycle.load(cmd.incident_id)
        if inc is None or inc.state not in ANSWERABLE:
            state = inc.state if inc else "missing"
            self.finish(cmd, Failed, f"incident #{cmd.incident_id} is {state}; nothing to do")
            return
        try:
            if cmd.verb == "deny":
                self._deny(cmd)
            elif cmd.verb == "approve":
                await self._approve(cmd, inc)
            elif cmd.verb == "reply":
                await self._reply(cmd, inc)
            elif cmd.verb == "mute":
                self._mute(cmd, inc)
            elif cmd.verb == "unmute":
                self._unmute(cmd, inc)
            elif cmd.verb == "resolve":
                self._resolve(cmd)
            elif cmd.verb == "propose":
                await self._propose(cmd, inc)
            else:
                self.finish(cmd, Failed, f"unknown verb {cmd.verb!r}")
        except Exception as exc:
            logger.opt(exception=exc).error("incident #{}: {} failed", cmd.incident_id, cmd.verb)
            self.finish(cmd, Failed, f"{cmd.verb} failed: {exc}")

    def _deny(self, cmd: HumanCommand) -> None:
        self.lifecycle.note(
            cmd.incident_id, "denied", f"denied by {cmd.actor}", actor_name=cmd.actor
        )
        self.lifecycle.move(cmd.incident_id, S.escalated, f"{cmd.actor} denied the proposed remedy")
        record_remediation("denied")
        self.remediator.trajectories.settle(
            cmd.incident_id, human_decision="denied", verified=False
        )
        self.finish(cmd, Done, deny_outcome(cmd.incident_id))

    def _mute(self, cmd: HumanCommand, inc: Incident) -> None:
        seconds = float(cmd.fix or self.mute_for)
        row = mutes.mute(self.db, inc.target, seconds, cmd.actor)
        self.lifecycle.move(
            cmd.incident_id,
            S.muted,
            f"{cmd.actor} muted {inc.target} for {format_duration(seconds)}",
            muted_until=row.until.isoformat(),
        )
        self.lifecycle.release(cmd.incident_id)  # muted: nothing runs until it reopens
        self.finish(
            cmd,
            Done,
            f"muted {inc.target} for {format_duration(seconds)}: nobody is asked or paged "
            f"about it until {row.until:%Y-%m-%d %H:%M} UTC (`guard unmute {cmd.incident_id}`)",
        )

    def _unmute(self, cmd: HumanCommand, inc: Incident) -> None:
        """End the target's mutes; a muted incident opens again (the agent takes it next)."""
        ended = mutes.unmute(self.db, inc.target, cmd.actor)
        if inc.state == S.muted:
            self.lifecycle.move(
                cmd.incident_id,
                S.open,
                f"{cmd.actor} unmuted {inc.target}",
                muted_until=None,
                silenced=None,
            )
        self.finish(cmd, Done, f"unmuted {inc.target} ({ended} mute(s) ended)")

    def _resolve(self, cmd: HumanCommand) -> None:
        self.lifecycle.move(
            cmd.incident_id,
            S.resolved,
            f"resolved by {cmd.actor}",
            resolved_by=cmd.actor,
            muted_until=None,
        )
        self.lifecycle.release(cmd.incident_id)
        self.remediator.trajectories.settle(cmd.incident_id, human_decision="resolved")
        self.finish(
            cmd,
            Done,
            f"incident #{cmd.incident_id} resolved by {cmd.actor}; it opens again if the "
            "fault comes back",
        )

    async def _approve(self, cmd: HumanCommand, inc: Incident) -> None:
        name = cmd.skill
        if name is None:
            ranked: list[Candidate] = []
            shown = list(inc.details.get("options") or [])
            if not shown:
                ranked = (await self.recaller.recall(inc)).candidates
            name = policy.first_option(shown, ranked)
            if name is None:
                self.finish(cmd, Failed, "no skill matches this incident; send a fix instead")
                return
        proposal = inc.details.get("proposal")
        if name == policy.PROPOSAL and isinstance(proposal, dict):
            fix = str(proposal["fix"])
            if refused := self._unshown(cmd, fix):
                self.lifecycle.note(cmd.incident_id, "approval_refused", refused)
                self.finish(cmd, Failed, refused)
                return
            await self._run_fix(cmd, inc, fix, "approved_proposal")
            return
        skill = self.library.get(name)
        if skill is None or skill.spec.trust == "disabled":
            self.finish(cmd, Failed, f"no enabled skill named {name!r} (see `guard skills list`)")
            return
        self.remediator.trajectories.settle(cmd.incident_id, human_decision="approved_skill")
        if await self.remediator.run_skill(cmd.incident_id, skill, approved_by=cmd.actor):
            self.finish(cmd, Done, f"skill {name} ran and the incident is resolved")
        else:
            self.lifecycle.move(
                cmd.incident_id, S.awaiting_human, f"approved skill {name} did not cure it"
            )
            self.finish(cmd, Failed, f"skill {name} ran but did not cure the incident")

    def _unshown(self, cmd: HumanCommand, fix: str) -> str:
        """Why the proposal ``fix`` may not run on ``cmd`` ("" when it may): an approval runs
        only the exact text it was shown, whose digest it carries (``cmd.fix``)."""
        where = f"`guard incidents show {cmd.incident_id}` shows the proposal now"
        if odd := oddities(fix):
            return (
                "nothing ran: the proposal is not a command a human can read whole "
                f"({'; '.join(odd)})"
            )
        if not cmd.fix:
            return f"nothing ran: this approval names no proposal text it was shown; {where}"
        now = digest(fix)
        if not now.startswith(cmd.fix.lower()) or len(cmd.fix) < 12:
            return (
                f"nothing ran: the proposal changed after it was shown (approved "
                f"{short(cmd.fix)}, now {short(now)}); {where}: approve that one if it is right"
            )
        return ""

    async def _propose(self, cmd: HumanCommand, inc: Incident) -> None:
        """Offer ``cmd``'s proposal (JSON: fix, reason, confidence) first and ask again."""
        assert inc.id is not None
        if self.asker is None:
            self.finish(cmd, Failed, "this agent takes no proposals")
            return
        if inc.state not in (S.awaiting_human, S.escalated):
            self.finish(
                cmd,
                Failed,
                f"incident #{inc.id} is {inc.state}: a proposal is offered only while a "
                "human is asked",
            )
            return
        try:
            body = json.loads(cmd.fix or "")
            fix, reason = str(body["fix"]).strip(), str(body.get("reason") or "").strip()
            proposal = Proposal(fix, reason, float(body.get("confidence", 0.5)), cmd.actor)
        except (ValueError, KeyError, TypeError):
            self.finish(cmd, Failed, "malformed proposal: JSON with fix, reason, confidence")
            return
        if odd := oddities(fix):
            self.finish(cmd, Failed, f"refused as a proposal: {'; '.join(odd)}")
            return
        ranked = (await self.recaller.recall(inc)).candidates
        await self.asker.ask(
            inc.id,
            ranked,
            inc.message,
            f"Reason given: {reason or '(none)'}",
            escalate=inc.state == S.escalated,
            proposal=proposal,
        )
        self.finish(
            cmd,
            Done,
            f"offered as the first option on incident #{inc.id} (digest "
            f"{short(digest(fix))}); it runs only when a human approves it",
        )

    async def _reply(self, cmd: HumanCommand, inc: Incident) -> None:
        """Run a human's fix in the learning loop: execute, verify, and learn only if cured."""
        fix = (cmd.fix or "").strip()
        if not fix:
            self.finish(cmd, Failed, "empty fix")
            return
        await self._run_fix(cmd, inc, fix, "replied")

    async def _run_fix(self, cmd: HumanCommand, inc: Incident, fix: str, decision: str) -> None:
        """Run ``fix`` (a human's, or the model's proposal a human approved) and learn it; a
        probe (``guard.agent.probing``) only adds evidence."""
        if self.actions.read_only(fix):
            ran, said = await self.prober.probe(inc, fix, cmd.actor)
            self.finish(cmd, Done if ran else Failed, said)
            return
        self.remediator.trajectories.settle(cmd.incident_id, human_decision=decision)
        step = fix_step(
            self.actions, fix, inc, actor=cmd.actor, timeout=self.settings.agent.fix_timeout
        )
        if step.run is not None:  # a shell fix: refused at once where no sandbox can run it
            from guard.actions.fixforms import fix_forms

            forms = await asyncio.to_thread(fix_forms, self.settings)
            if not forms.shell:
                self.lifecycle.note(cmd.incident_id, "fix_refused", forms.refusal(), fix=fix)
                self.finish(cmd, Failed, forms.refusal())
                return
        settled = await self.remediator.run_fix(cmd.incident_id, step, fix=fix, actor=cmd.actor)
        self.finish(cmd, Done if settled.verified else Failed, settled.message)
