"""Diagnosis: read-only evidence for an incident, kept on it and shown to the human.

The playbook's diagnostics for the incident's kind, then the best candidate skill's, run in the
incident's sandbox (with the grants the remedy would get); a Docker incident with none gets the
container's last log lines. A Kubernetes crash's evidence opens with the last lines of the
container instance that died (kept on the incident by its monitor). Evidence is redacted and
capped.

A skill that may not run unasked (``trust: approval``, or pending review) came from a commit no
human has approved for this system: its diagnostics run with no grant at all (no network, no
secret, no mount) until one approves the skill, so they cannot send the playbook's secrets
anywhere.
"""

from __future__ import annotations

import asyncio

from guard.agent.remediation import Remediator
from guard.agent.steps import NoSandbox, StepRunner
from guard.agent.templating import describe, incident_context, render_args
from guard.harness import spans
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import Lifecycle
from guard.k8s.evidence import previous_block
from guard.monitors import monitor_kind
from guard.playbooks.models import Playbook
from guard.redact import Redactor
from guard.sandbox.base import SandboxGrants
from guard.skills.library import Candidate, Skill
from guard.skills.model import Step
from guard.store.models import Incident, IncidentState

EVIDENCE_LIMIT = 8000
PREVIOUS_LIMIT = 4000  # of it, for a crashed container's last lines (the last of them)
ACTION_KEEP = 4000  # of a diagnostic action's result: a probe's summary is its first line


class Diagnoser:
    def __init__(
        self,
        lifecycle: Lifecycle,
        runner: StepRunner,
        remediator: Remediator,
        books: dict[str, Playbook],
        redactor: Redactor,
    ) -> None:
        self.lifecycle = lifecycle
        self.runner = runner
        self.remediator = remediator
        self.books = books
        self.redactor = redactor

    def steps_for(
        self, inc: Incident, candidates: list[Candidate]
    ) -> list[tuple[Step, Skill | None]]:
        steps: list[tuple[Step, Skill | None]] = []
        book = self.books.get(inc.monitor_id)
        for diag in book.diagnostics if book is not None else []:
            if diag.action is not None and (not diag.kinds or inc.kind in diag.kinds):
                steps.append((Step(action=diag.action, args=dict(diag.args)), None))
            elif not diag.kinds or inc.kind in diag.kinds:
                steps.append((Step(run=diag.run, timeout=diag.timeout), None))
        if candidates:
            steps += [(s, candidates[0].skill) for s in candidates[0].skill.spec.diagnostics]
        kind = monitor_kind(inc.source)
        if kind is not None and kind.first_look is not None and not steps:
            look = kind.first_look
            steps.append((Step(action=look.action, args=dict(look.args)), None))
        return steps

    def grants_for(self, inc: Incident, skill: Skill | None) -> SandboxGrants:
        """The remedy's grants, or none for a skill no human has approved yet."""
        if skill is not None and not skill.runs_unasked:
            return SandboxGrants()
        return self.remediator.grants_for(inc, skill)

    def _reads(self, inc: Incident, step: Step) -> bool:
        """Whether a playbook's action step only reads: a probe, or the monitor kind's own
        first look (``docker.logs``)."""
        assert step.action is not None
        look = getattr(monitor_kind(inc.source), "first_look", None)
        return self.runner.actions.read_only(step.action) or (
            look is not None and look.action == step.action
        )

    @staticmethod
    def _unapproved(step: Step, skill: Skill | None) -> str:
        """Said of a shell step only: a probe runs Guard-side with its own grants (``probes:``)."""
        if skill is None or skill.runs_unasked or step.kind == "action":
            return ""
        return f"  (skill {skill.name} is not approved yet: no network, no secrets)"

    async def diagnose(self, inc: Incident, candidates: list[Candidate]) -> str:
        """Collect read-only evidence; keep it on the incident."""
        assert inc.id is not None
        reached("agent.diagnosing")
        parts: list[str] = []
        if previous := previous_block(inc.details or {}, chars=PREVIOUS_LIMIT):
            parts.append(previous)
        ctx = incident_context(inc)
        for step, skill in self.steps_for(inc, candidates):
            shown = describe(step, ctx)
            try:
                if step.kind == "action" and skill is None and not self._reads(inc, step):
                    raise ValueError(
                        f"{step.action} is not read-only: a playbook's diagnostics may run only "
                        "probes (probe.http, probe.tcp, ...); move it to a skill's steps"
                    )
                if step.kind == "action":
                    assert step.action is not None
                    args = render_args(dict(step.args), ctx)  # as the question shows them
                    out = await self.runner.action(step.action, args, inc, keep=ACTION_KEEP)
                else:
                    out = await self.runner.sandbox_run(
                        step, inc, skill, self.grants_for(inc, skill), ctx
                    )
                parts.append(f"$ {shown}{self._unapproved(step, skill)}\n{out.summary}")
            except NoSandbox as exc:
                parts.append(f"$ {shown}\n(skipped: {exc})")
            except Exception as exc:
                parts.append(f"$ {shown}\n(could not run: {exc})")
        # up to every step's output limit of text: redacted in a worker, not on the event loop
        evidence = (await asyncio.to_thread(self.redactor.redact, "\n".join(parts)))[
            :EVIDENCE_LIMIT
        ]
        if evidence:
            self.lifecycle.move(
                inc.id, IncidentState.diagnosing, "evidence collected", evidence=evidence
            )
            self.lifecycle.note(inc.id, "diagnosed", evidence[:1000])
        spans.mark("diagnosis.done", inc.target)
        return evidence
