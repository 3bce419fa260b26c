"""A probe sent as a reply (``guard reply N -- probe.http URL``), or a model's proposal that is
one: evidence, not a fix. It runs at once (audited, redacted, capped), its result joins the
incident's evidence and the timeline, and the incident keeps waiting for a fix: nothing is
verified and nothing is learned, for a probe changes nothing and so cannot have cured it.
Tested in tests/probes/test_probes_reply.py.
"""

from __future__ import annotations

from guard.actions import ActionError, ActionRegistry
from guard.agent.diagnosis import EVIDENCE_LIMIT
from guard.agent.steps import StepRunner
from guard.incidents.lifecycle import Lifecycle
from guard.store.models import Incident

KEEP = EVIDENCE_LIMIT // 2  # of one probe's result, on the incident


class Prober:
    def __init__(self, lifecycle: Lifecycle, runner: StepRunner, actions: ActionRegistry) -> None:
        self.lifecycle = lifecycle
        self.runner = runner
        self.actions = actions

    async def probe(self, inc: Incident, text: str, actor: str) -> tuple[bool, str]:
        """Run the probe ``text`` for ``actor``; (whether it ran, what to answer)."""
        assert inc.id is not None
        try:
            action, args = self.actions.parse(text)
            out = await self.runner.action(action.name, args, inc, keep=KEEP)
        except ActionError as exc:
            said = self.runner.redactor.redact(str(exc))
            self.lifecycle.note(inc.id, "probed", f"{text}: {said}", actor=actor, ok=False)
            return False, f"probe not run: {said}"
        block = f"$ {text}  (by {actor})\n{out.summary}"
        before = str((inc.details or {}).get("evidence") or "")
        evidence = (f"{before}\n{block}" if before else block)[-EVIDENCE_LIMIT:]
        self.lifecycle.move(inc.id, inc.state, f"{actor} probed: {text}", evidence=evidence)
        self.lifecycle.note(inc.id, "probed", block[:1000], actor=actor, ok=out.ok)
        return True, (
            f"{out.summary}\n(a probe changes nothing: incident #{inc.id} still waits for a "
            "fix; its result is in the incident's evidence)"
        )
