"""Execute a remediation run step by step, persisting each step before and after it runs.

A step marked ``running`` when Guard starts again was interrupted: if it was a ``run`` or an
``action`` it may have taken effect, so it is never repeated (at most once; verification then
tells whether it worked). ``wait`` and ``verify`` steps are safe to repeat and are re-run.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from loguru import logger
from sqlmodel import col, select

from guard import cluster
from guard.actions import ActionContext, ActionError, ActionRegistry
from guard.agent.templating import describe, incident_context, render, render_args
from guard.agent.verify import Verifier
from guard.config import Settings
from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.harness import spans
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import record
from guard.redact import Redactor
from guard.sandbox.base import SandboxGrants, SandboxPool
from guard.sandbox.reach import SHELL_CANNOT_RUN, reach
from guard.skills.library import Skill
from guard.skills.model import Step, VerifySpec
from guard.store import audit, holds
from guard.store.db import Database
from guard.store.models import AgentStep, Incident, RemediationRun, StepStatus
from guard.telemetry.metrics import observe_sandbox_exec
from guard.util.textsafe import line_tail

REPEATABLE = frozenset({"wait", "verify"})
KEEP = 4000  # characters of output kept per stream in the step record


class NoSandbox(GuardError):
    """A shell step where no sandbox can run (``guard.sandbox.reach``): never tried, so it
    cannot fail on the engine's connection error at 3 a.m."""


@dataclass(frozen=True)
class StepOutcome:
    ok: bool
    summary: str
    result: dict[str, Any]


class StepRunner:
    """Runs steps for the agent; knows the sandbox pool, the actions and the verifier."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        actions: ActionRegistry,
        verifier: Verifier,
        sandboxes: SandboxPool,
        redactor: Redactor,
    ) -> None:
        self.settings = settings
        self.db = db
        self.actions = actions
        self.verifier = verifier
        self.sandboxes = sandboxes
        self.redactor = redactor

    # -- persistence ----------------------------------------------------------------------------

    def plan(self, run: RemediationRun, steps: list[Step]) -> None:
        """Persist every step of ``run`` as pending (a verify step is added if missing)."""
        if not any(s.kind == "verify" for s in steps):
            steps = [*steps, Step(verify=VerifySpec(timeout=self.settings.agent.verify_timeout))]
        assert run.id is not None
        with self.db.session() as session:
            inc = session.get(Incident, run.incident_id)
            ctx = incident_context(inc) if inc is not None else {}
            for i, step in enumerate(steps):
                dumped = step.model_dump(mode="json", exclude_none=True)
                session.add(
                    AgentStep(
                        incident_id=run.incident_id,
                        run_id=run.id,
                        index=i,
                        kind=step.kind,
                        description=self.redactor.redact(describe(step, ctx)),
                        result={"step": dumped},
                    )
                )

    def steps(self, run_id: int) -> list[AgentStep]:
        with self.db.session() as session:
            return list(
                session.exec(
                    select(AgentStep)
                    .where(AgentStep.run_id == run_id)
                    .order_by(col(AgentStep.index))
                ).all()
            )

    def _mark(self, row: AgentStep, status: StepStatus, **result: Any) -> None:
        with self.db.session() as session:
            fresh = session.get(AgentStep, row.id)
            assert fresh is not None
            fresh.status = status
            if status == StepStatus.running:  # the claim: only the leader's current term acts
                fresh.result = {
                    **fresh.result,
                    "fence_token": cluster.current().claim(session, "step", fresh.id),
                }
                fresh.started_at = utcnow()
            else:
                fresh.finished_at = utcnow()
            fresh.result = {**fresh.result, **result}
            session.add(fresh)
            inc = session.get(Incident, fresh.incident_id)
            if status != StepStatus.running and inc is not None:
                record(
                    session,
                    inc,
                    "step",
                    f"{fresh.description}: {status}"
                    + (f" ({result.get('summary')})" if result.get("summary") else ""),
                    actor="agent",
                    step=fresh.index,
                    kind=fresh.kind,
                    status=status,
                    run=fresh.run_id,
                )
            row.status = fresh.status
            row.result = fresh.result

    # -- execution ------------------------------------------------------------------------------

    async def execute(
        self, run: RemediationRun, incident: Incident, skill: Skill | None, grants: SandboxGrants
    ) -> tuple[bool, str]:
        """Run the pending steps of ``run``; return (verified, reason)."""
        assert run.id is not None
        reason = "no verification ran"
        for row in self.steps(run.id):
            if row.status in (StepStatus.done, StepStatus.skipped, StepStatus.interrupted):
                if row.kind == "verify" and row.status == StepStatus.done:
                    reason = str(row.result.get("summary", reason))
                continue
            if row.status == StepStatus.failed:
                return False, str(row.result.get("summary", "a step failed"))
            if row.status == StepStatus.running and row.kind not in REPEATABLE:
                note = "Guard stopped during this step; not repeated (at most once)"
                self._mark(row, StepStatus.interrupted, summary=note)
                logger.warning(
                    "incident #{}: step {} was interrupted; not repeating it",
                    incident.id,
                    row.description,
                )
                continue
            if row.kind == "verify":
                reached("remedy.before_verify")
            self._mark(row, StepStatus.running)
            if row.kind == "action":
                self._acted(run.id, acting=True)
            reached("step.started")
            step = Step.model_validate(row.result["step"])
            try:
                outcome = await self._one(step, incident, skill, grants)
            except GuardError as exc:
                outcome = StepOutcome(False, str(exc), {})
            except Exception as exc:  # a bug must not leave the step running forever
                logger.opt(exception=exc).error("step {} raised", row.description)
                outcome = StepOutcome(False, f"{type(exc).__name__}: {exc}", {})
            if row.kind == "action":
                self._acted(run.id, acting=False)
            summary = self.redactor.redact(outcome.summary)[:1000]
            self._mark(
                row,
                StepStatus.done if outcome.ok else StepStatus.failed,
                summary=summary,
                output=outcome.result,
            )
            reached("step.ended")
            if not outcome.ok:
                return False, summary
            if row.kind == "verify":
                reason = summary
        return True, reason

    def outcome(self, run_id: int, verified: bool) -> str:
        """How a finished run ended, as a ``guard_remediations`` outcome label."""
        if verified:
            return "succeeded"
        failed = next((r for r in self.steps(run_id) if r.status == StepStatus.failed), None)
        if failed is None:  # no step failed, yet nothing verified: count it as a failure
            return "failed"
        if failed.kind == "verify":
            return "verify_failed"  # every step ran; the check that fired still fails
        return "timed_out" if (failed.result.get("output") or {}).get("timed_out") else "failed"

    async def _one(
        self, step: Step, incident: Incident, skill: Skill | None, grants: SandboxGrants
    ) -> StepOutcome:
        ctx = incident_context(incident)
        if step.kind == "wait":
            assert step.wait is not None
            await asyncio.sleep(step.wait)
            return StepOutcome(True, f"waited {step.wait:g}s", {})
        if step.kind == "verify":
            assert step.verify is not None
            verdict = await self.verifier.verify(incident, step.verify)
            return StepOutcome(verdict.passed, verdict.reason, {"attempts": verdict.attempts})
        if step.kind == "action":
            assert step.action is not None
            spans.mark("action.start", incident.target)
            try:
                return await self.action(step.action, render_args(step.args, ctx), incident)
            finally:
                spans.mark("action.end", incident.target)
        assert step.run is not None
        return await self.sandbox_run(step, incident, skill, grants, ctx)

    async def action(
        self, name: str, args: dict[str, Any], incident: Incident, *, keep: int = 500
    ) -> StepOutcome:
        """Run action ``name`` (audited); its message, redacted, cut to the last ``keep``."""
        action = self.actions.get(name)
        try:
            ctx = ActionContext(self.settings, incident_context(incident)["incident"])
            result = await action.run(args, ctx)
        except ActionError as exc:
            self._audit(incident, f"action.{name}", {"args": args, "ok": False, "error": str(exc)})
            raise
        message = self.redactor.redact(result.message)
        self._audit(
            incident, f"action.{name}", {"args": args, "ok": result.ok, "message": message[:500]}
        )
        return StepOutcome(result.ok, line_tail(message.strip(), keep) or name, result.details)

    async def no_shell(self) -> str:
        """Why no shell step can run here ("" when one can); asked at most once a minute."""
        found = await asyncio.to_thread(reach, self.settings.sandbox, self.settings.kubernetes)
        return "" if found.ok else f"{SHELL_CANNOT_RUN} ({found.why})"

    async def sandbox_run(
        self,
        step: Step,
        incident: Incident,
        skill: Skill | None,
        grants: SandboxGrants,
        ctx: dict[str, Any],
    ) -> StepOutcome:
        """Run a shell step in the incident's sandbox; ``NoSandbox`` where none can run."""
        assert step.run is not None and incident.id is not None
        if why := await self.no_shell():
            raise NoSandbox(why)
        script = skill.script(step.run) if skill is not None else None
        env = {
            "GUARD_TARGET": incident.target,
            "GUARD_INCIDENT_ID": str(incident.id),
            "GUARD_KIND": incident.kind,
        }
        if script is not None:
            command: str = "sh -s"
            stdin: str | None = script.read_text()
        else:
            command, stdin = render(step.run, ctx, shell=True), step.stdin
        sandbox = await self.sandboxes.get(str(incident.id), grants)
        started = time.monotonic()
        try:
            res = await sandbox.run(
                command, timeout=step.timeout or self.settings.sandbox.timeout, env=env, stdin=stdin
            )
        finally:
            observe_sandbox_exec(time.monotonic() - started)
        result = {
            "exit_code": res.exit_code,
            "stdout": line_tail(res.stdout, KEEP),
            "stderr": line_tail(res.stderr, KEEP),
            "timed_out": res.timed_out,
            "oom_killed": res.oom_killed,
            "duration": round(res.duration, 3),
        }
        self._audit(
            incident,
            "sandbox.run",
            {
                "command": step.run,
                "step": self.redactor.redact(describe(step, ctx)),
                "exit_code": res.exit_code,
                "timed_out": res.timed_out,
                "oom_killed": res.oom_killed,
            },
        )
        why = (
            "timed out"
            if res.timed_out
            else "OOM-killed"
            if res.oom_killed
            else f"exit {res.exit_code}"
        )
        tail = line_tail(res.stdout.strip() or res.stderr.strip(), 300)
        return StepOutcome(res.ok, f"{why}: {tail}" if tail else why, result)

    def _acted(self, run_id: int, *, acting: bool) -> None:
        """Mark the run's hold (``guard.agent.holding``): its action acts, or just acted."""
        with self.db.session() as session:
            holds.acted(session, run_id, acting=acting)

    def _audit(self, incident: Incident, action: str, data: dict[str, Any]) -> None:
        with self.db.session() as session:
            audit.append(
                session, actor="agent", action=action, subject=f"incident:{incident.id}", data=data
            )
