"""The tools' work for one incident (``Toolbox``); their names and schemas are in ``registry``.

``sandbox_run {command}`` runs in the incident's hardened sandbox with its grants (the same
``StepRunner.sandbox_run`` diagnostics use); ``probe {probe}`` runs a read-only probe in
Guard's process, within the ``probes:`` grants; ``recent_logs {lines}``; ``search_memory
{query}``; ``list_skills {}``; ``show_skill {name}``; ``propose_remedy {fix, reason,
confidence}`` ends the investigation with a proposal, which nothing runs until a human
approves it; a fix a human could not read whole (``guard.util.commandtext.oddities``: control or
invisible characters, a run of whitespace, over 1,000 characters) is refused back to the
model. Each tool returns text; a tool that fails says why, as text, to the model.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from guard.actions import ActionError, ActionRegistry
from guard.agent.steps import NoSandbox, StepRunner
from guard.agent.templating import incident_context
from guard.agent.tools.registry import MAX_LOG_LINES, TOOL_NAMES, TOOLS
from guard.domain.exceptions import MonitorError
from guard.memory import IncidentMemory
from guard.monitors import monitor_kind
from guard.sandbox.base import SandboxGrants
from guard.skills.library import SkillLibrary
from guard.skills.model import Step
from guard.store.models import Incident
from guard.util.commandtext import oddities


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model."""


@dataclass(frozen=True)
class Proposal:
    """A fix a model proposes (``guard reply`` FIX grammar); run only once a human approves."""

    fix: str
    reason: str
    confidence: float
    model: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "fix": self.fix,
            "reason": self.reason,
            "confidence": self.confidence,
            "model": self.model,
        }


class Shelf:
    """The tools bound to no incident: memory and the skills (MCP calls them on their own)."""

    def __init__(self, library: SkillLibrary, memory: IncidentMemory) -> None:
        self.library = library
        self.memory = memory

    async def call(self, name: str, args: dict[str, Any]) -> str:
        """The tool's result as text; raises ``ToolError`` with what went wrong."""
        if name == "search_memory":
            return await self.search_memory(_text(args, "query"))
        if name == "list_skills":
            return (
                "\n".join(f"{s.name}: {s.description}" for s in self.library.skills) or "no skills"
            )
        if name == "show_skill":
            skill = self.library.get(_text(args, "name"))
            if skill is None:
                raise ToolError(f"no skill named {args.get('name')!r}; see list_skills")
            steps = "\n".join(f"- {s.describe()}" for s in skill.spec.steps)
            return f"{skill.name}: {skill.offer_text()}\nsteps:\n{steps}"
        raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")

    async def search_memory(self, query: str) -> str:
        try:
            found = await asyncio.to_thread(self.memory.search, query, 5)
        except Exception as exc:
            raise ToolError(f"memory is unavailable: {exc}") from None
        return (
            json.dumps(
                [
                    {
                        "incident": r.incident_id,
                        "score": r.score,
                        "skill": r.skill,
                        "resolution": r.resolution,
                    }
                    for r in found
                ]
            )
            if found
            else "[]"
        )


class Toolbox(Shelf):
    """Carries out tool calls for one incident."""

    def __init__(
        self,
        inc: Incident,
        runner: StepRunner,
        grants: SandboxGrants,
        library: SkillLibrary,
        memory: IncidentMemory,
        actions: ActionRegistry,
        timeout: float,
    ) -> None:
        super().__init__(library, memory)
        self.inc = inc
        self.runner = runner
        self.grants = grants
        self.actions = actions
        self.timeout = timeout

    async def offered(self) -> list[dict[str, Any]]:
        """The investigation's tools that can run here: no ``sandbox_run`` where no sandbox
        can (the model would only read the engine's connection error)."""
        if not await self.runner.no_shell():
            return TOOLS
        return [t for t in TOOLS if t["function"]["name"] != "sandbox_run"]

    async def call(self, name: str, args: dict[str, Any]) -> str:
        """The tool's result as text; raises ``ToolError`` with what went wrong."""
        if name == "sandbox_run":
            return await self.sandbox_run(_text(args, "command"))
        if name == "recent_logs":
            return await self.recent_logs(_int(args, "lines", 50))
        if name == "probe":
            return await self.probe(_text(args, "probe").strip())
        return await super().call(name, args)

    def proposal(self, args: dict[str, Any], model: str) -> Proposal:
        """Check a ``propose_remedy`` call (an action must parse); raise ``ToolError``."""
        fix = _text(args, "fix").strip()
        if odd := oddities(fix):
            raise ToolError(
                f"refused as a proposal: {'; '.join(odd)}. A human must read the whole "
                "command before it runs: propose a plain, short command"
            )
        if self.actions.looks_like_action(fix):
            try:
                self.actions.parse(fix)
            except ActionError as exc:
                raise ToolError(f"fix {fix!r} is not a valid action: {exc}") from None
        try:
            confidence = min(max(float(args.get("confidence", 0.5)), 0.0), 1.0)
        except (TypeError, ValueError):
            raise ToolError("confidence must be a number from 0 to 1") from None
        return Proposal(fix, str(args.get("reason") or "").strip(), confidence, model)

    async def sandbox_run(self, command: str) -> str:
        step = Step(
            name=f"model: {command}"[:200], run="sh -s", stdin=command, timeout=self.timeout
        )
        try:
            out = await self.runner.sandbox_run(
                step, self.inc, None, self.grants, incident_context(self.inc)
            )
        except NoSandbox as exc:
            raise ToolError(f"{exc}: use probe instead") from None
        r = out.result
        parts = [
            f"exit_code: {r.get('exit_code')}"
            + (" (timed out)" if r.get("timed_out") else "")
            + (" (OOM-killed)" if r.get("oom_killed") else "")
        ]
        if r.get("stdout"):
            parts.append(f"stdout:\n{r['stdout']}")
        if r.get("stderr"):
            parts.append(f"stderr:\n{r['stderr']}")
        return "\n".join(parts)

    async def probe(self, text: str) -> str:
        """A read-only probe (``guard.actions.probes``), within the ``probes:`` grants."""
        if not self.actions.read_only(text):
            raise ToolError(f"{text.split(' ', 1)[0]!r} is not a probe: probe.http, probe.tcp, ...")
        try:
            action, args = self.actions.parse(text)
            out = await self.runner.action(action.name, args, self.inc, keep=8000)
        except ActionError as exc:
            raise ToolError(str(exc)) from None
        return f"ok: {out.ok}\n{out.summary}"

    async def recent_logs(self, lines: int) -> str:
        """The target's last lines, as the incident's monitor kind reads them (if it can)."""
        lines = min(max(lines, 1), MAX_LOG_LINES)
        kind = monitor_kind(self.inc.source)
        if kind is None or kind.recent_lines is None:
            return (
                f"no log source for a {self.inc.source} incident; its message: {self.inc.message}"
            )
        try:
            return await kind.recent_lines(self.inc, lines, self._run_action)
        except (ActionError, MonitorError) as exc:
            raise ToolError(str(exc)) from None

    async def _run_action(self, name: str, args: dict[str, Any]) -> tuple[str, Any]:
        out = await self.runner.action(name, args, self.inc, keep=20000)
        return out.summary, out.result


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"argument {key!r} must be a non-empty string")
    return value


def _int(args: dict[str, Any], key: str, default: int) -> int:
    try:
        return int(args.get(key, default))
    except (TypeError, ValueError):
        raise ToolError(f"argument {key!r} must be an integer") from None
