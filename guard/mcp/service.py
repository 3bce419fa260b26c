"""The tools carried out for an MCP caller: authorised, audited, redacted, never a traceback.

``GuardTools.call(actor, name, args)``:

1. the gate (``guard.incidents.gate``, with ``guard.access.policy.RolePolicy`` first) is asked
   the tool's verb (``ToolSpec.verb``); a refusal names the role missing (``needs operator;
   you are viewer``), is audited as ``mcp.refused`` and comes back as an error result;
2. the tool runs: reads from the store; ``sandbox_run`` and ``recent_logs`` through the
   incident's ``Toolbox`` (the investigation's sandbox grants and timeout); ``propose_remedy``,
   ``approve`` and ``deny`` are queued human commands (``queue_command``: the gate again, in
   the transaction that queues them), which the running Guard's agent carries out; this
   waits for the outcome while an agent is alive;
3. the result is redacted (the agent's ``Redactor``: Guard's own secrets, then the policy every
   exit uses) and cut to ``llm.tool_result_chars`` as for the model (an incident's JSON to
   ``reads.READ_CHARS``, dropping its oldest timeline entries), and the call is audited
   as ``mcp.<tool>`` under the actor's name (``token:NAME``, ``mcp:stdio:USER``);
4. what the tool read (``DATA``: incidents, logs, command output, memory, skills; its errors
   too, and any unexpected failure's) is then fenced as untrusted data
   (``guard.agent.fencing``), with one ``Fence`` per ``GuardTools``, i.e. per process, whose
   ``rule`` the server's instructions carry: a log line reaches the caller's model as data,
   never as an instruction. Guard's own answers (refusals, ``queued as answer #N``, a
   remedy's outcome) are not fenced.

Tested by ``tests/mcp/test_mcp_service.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from loguru import logger

from guard.agent.fencing import Fence
from guard.agent.investigation import cap
from guard.agent.policy import PROPOSAL
from guard.agent.tools import BY_NAME, Shelf, Toolbox, ToolError, ToolSpec
from guard.config import Settings
from guard.incidents.commands import UnknownIncident, agent_alive, queue_command
from guard.incidents.gate import Actor, Gate, NotAuthorised, Refused
from guard.mcp import reads, silencing
from guard.memory import IncidentMemory
from guard.redact import Redactor
from guard.skills.ladder import describe
from guard.skills.library import SkillLibrary
from guard.store import audit
from guard.store.db import Database
from guard.store.models import CommandStatus, HumanCommand, Incident, IncidentState
from guard.util.commandtext import digest, short
from guard.util.textsafe import printable

ASKING = (IncidentState.awaiting_human, IncidentState.escalated)
READS = ("list_incidents", "show_incident")  # cut to ``reads.READ_CHARS``, not the model's bound
# Guard's own words back: not fenced
ANSWERS = ("propose_remedy", "approve", "deny", "resolve", "mute", "unmute", "silence")
DATA = frozenset(BY_NAME) - frozenset(ANSWERS)  # what they read came from outside Guard: fenced
WAIT = 300.0  # seconds a queued answer is waited for (a remedy runs, then is verified)
POLL = 0.5
_HEX = re.compile(r"[0-9a-fA-F]{12,64}")


class Parts(Protocol):
    """What the tools need of an agent (``guard.agent.loop.Agent`` is one)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def redactor(self) -> Redactor: ...

    @property
    def library(self) -> SkillLibrary: ...

    @property
    def memory(self) -> IncidentMemory: ...

    def toolbox(self, inc: Incident) -> Toolbox: ...


@dataclass(frozen=True)
class Outcome:
    """A tool's result: text for the caller; ``error``: it did not do what was asked."""

    text: str
    error: bool = False


class GuardTools:
    """Guard's tools for MCP callers, over one agent's parts and the gate."""

    def __init__(
        self,
        parts: Parts,
        gate: Gate,
        *,
        wait: float = WAIT,
        reload_skills: bool = False,
    ) -> None:
        self.parts = parts
        self.db = parts.db
        self.gate = gate
        self.wait = wait
        self.reload_skills = reload_skills  # a process apart from `guard run` sees new skills
        self.limit = parts.settings.llm.tool_result_chars
        self.fence = Fence()  # one per process: the server's instructions carry its rule
        self._handlers: dict[str, Callable[[Actor, str, dict[str, Any]], Awaitable[Outcome]]] = {
            "list_incidents": self._list_incidents,
            "show_incident": self._show_incident,
            "sandbox_run": self._bound,
            "probe": self._bound,
            "recent_logs": self._bound,
            "search_memory": self._shelf,
            "list_skills": self._shelf,
            "show_skill": self._shelf,
            "propose_remedy": self._propose,
            "approve": self._answer,
            "deny": self._answer,
            "resolve": self._answer,
            "mute": self._answer,
            "unmute": self._answer,
            "silence": self._silences,
            "silences": self._silences,
        }

    async def call(self, actor: Actor, name: str, args: dict[str, Any] | None) -> Outcome:
        """Carry out tool ``name`` for ``actor``; every outcome is redacted and audited."""
        args = dict(args or {})
        spec = BY_NAME.get(name)
        fenced = False
        try:
            if spec is None:
                raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(BY_NAME)}")
            refused = await self.authorise(actor, spec, _incident_id(spec, args))
            if refused is not None:
                outcome = Outcome(f"refused: {refused}", error=True)
            else:
                fenced = name in DATA  # its result, or its error, may quote what it read
                outcome = await self._handlers[name](actor, name, dict(args))
        except (ToolError, UnknownIncident, NotAuthorised, ValueError) as exc:
            prefix = "refused: " if isinstance(exc, NotAuthorised) else ""
            outcome = Outcome(f"{prefix}{exc}", error=True)
        except Exception as exc:  # the caller gets what failed, never a traceback
            logger.opt(exception=exc).error("mcp: {} by {} failed", name, actor.name)
            outcome = Outcome(f"{name} failed: {type(exc).__name__}: {exc}", error=True)
            fenced = True  # an exception's text may quote anything
        limit = 2 * reads.READ_CHARS if name in READS else self.limit  # a read: whole JSON
        text = cap(printable(self.parts.redactor.redact(outcome.text)), limit)
        await asyncio.to_thread(self._audit, actor, name, args, outcome.error, text)
        source = name if name in BY_NAME else "unknown"
        return Outcome(self.fence.wrap(text, source) if fenced else text, outcome.error)

    def fenced(self, text: str, source: str) -> str:
        """``text`` from outside Guard, redacted, made visible, then fenced (as a tool's
        result is)."""
        return self.fence.wrap(printable(self.parts.redactor.redact(text)), source)

    async def authorise(self, actor: Actor, spec: ToolSpec, incident_id: int | None) -> str | None:
        """Why ``actor`` may not call ``spec`` (audited as ``mcp.refused``), or None."""

        def ask() -> str | None:
            inc = None
            if incident_id is not None:
                with self.db.session() as session:
                    inc = session.get(Incident, incident_id)
            decision = self.gate.authorise(actor, spec.verb, inc)
            if not isinstance(decision, Refused):
                return None
            with self.db.session() as session:
                audit.append(
                    session,
                    actor=actor.name,
                    action="mcp.refused",
                    subject=f"incident:{incident_id}" if incident_id else f"tool:{spec.name}",
                    data={"tool": spec.name, "verb": spec.verb, "reason": decision.reason},
                )
            return decision.reason

        return await asyncio.to_thread(ask)

    def _audit(self, actor: Actor, name: str, args: dict[str, Any], error: bool, text: str) -> None:
        known = name in BY_NAME
        incident_id = _incident_id(BY_NAME[name], args) if known else None
        data: dict[str, Any] = {"args": args, "ok": not error, "channel": actor.channel}
        if not known:  # the caller's text: in the data, not as the action
            data["tool"], name = name[:200], "unknown"
        if error:
            data["error"] = text[:500]
        with self.db.session() as session:
            audit.append(
                session,
                actor=actor.name,
                action=f"mcp.{name}",
                subject=f"incident:{incident_id}" if incident_id else f"tool:{name}",
                data=data,
            )

    # -- reads ----------------------------------------------------------------------------------

    async def _list_incidents(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        state = args.get("state")
        if state is not None and not isinstance(state, str):
            raise ToolError(f"argument 'state' must be a string: one of {reads.STATES}")
        limit = min(max(_int(args, "limit", 20), 1), 100)
        found = await asyncio.to_thread(reads.list_incidents, self.db, state or None, limit)
        return Outcome(json.dumps(reads.visible(found), indent=1))

    async def _show_incident(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        incident_id = _int(args, "id", None)
        found = await asyncio.to_thread(reads.incident_view, self.db, incident_id)
        if found is None:
            raise ToolError(f"no incident {incident_id}; see list_incidents")
        return Outcome(reads.fitted(reads.visible(found)))

    async def _shelf(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        if self.reload_skills:
            await asyncio.to_thread(self.parts.library.reload)
        shelf = Shelf(self.parts.library, self.parts.memory)
        text = await shelf.call(tool, args)
        if tool == "search_memory":  # JSON: what it quotes is made visible inside it
            text = json.dumps(reads.visible(json.loads(text)))
        if tool == "show_skill":
            text += await asyncio.to_thread(self._skill_record, str(args.get("name")))
        return Outcome(text)

    def _skill_record(self, name: str) -> str:
        """The skill's outcomes and standing on the ladder, as lines under ``show_skill``."""
        skill = self.parts.library.get(name)
        if skill is None:
            return ""
        with self.db.session() as session:
            out, standing = describe(session, [skill], self.parts.settings.skills)[name]
        lines = [f"trust: {standing.trust}", f"outcomes: {out.summary()}"]
        lines += [f"demoted: {standing.demoted}"] if standing.demoted else []
        lines += [f"promotion: {standing.proposed}"] if standing.proposed else []
        lines += ["stale: unused for skills.stale_after"] if standing.stale else []
        return "\n" + "\n".join(lines)

    async def _bound(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        inc = await self._incident(args)
        return Outcome(await self.parts.toolbox(inc).call(tool, args))

    # -- answers (queued for the agent) ---------------------------------------------------------

    async def _propose(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        inc = await self._incident(args)
        if inc.state not in ASKING:
            raise ToolError(
                f"incident #{inc.id} is {inc.state}: a fix is proposed only while Guard asks a "
                "human (awaiting_human or escalated)"
            )
        proposal = self.parts.toolbox(inc).proposal(args, actor.name)
        body = json.dumps(proposal.as_dict())
        return await self._queue(actor, inc, "propose", fix=body)

    async def _answer(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        inc = await self._incident(args)
        option = args.get("option")
        if option is not None and (not isinstance(option, str) or not option.strip()):
            raise ToolError("argument 'option' must be a skill's name or `proposal`")
        bound = _bound(inc, option, args.get("digest")) if tool == "approve" else None
        if bound is not None:
            option = PROPOSAL  # it runs that proposal or nothing, whatever is shown first then
        if tool == "mute" and args.get("for"):
            bound = str(silencing.seconds(args["for"]))  # as the CLI's --for
        return await self._queue(actor, inc, tool, skill=option, fix=bound)

    async def _silences(self, actor: Actor, tool: str, args: dict[str, Any]) -> Outcome:
        """``silence`` and ``silences`` (``guard.mcp.silencing``): written at once, not queued."""
        do = silencing.silence if tool == "silence" else silencing.listed
        return Outcome(await asyncio.to_thread(do, self.db, self.gate, actor, args))

    async def _queue(
        self, actor: Actor, inc: Incident, verb: str, *, skill: str | None = None, fix: str | None
    ) -> Outcome:
        assert inc.id is not None
        cmd = await asyncio.to_thread(
            lambda: queue_command(
                self.db,
                incident_id=inc.id or 0,
                verb=verb,
                actor=actor,
                gate=self.gate,
                skill=skill,
                fix=fix,
            )
        )
        if not await asyncio.to_thread(agent_alive, self.db):
            return Outcome(
                f"queued as answer #{cmd.id}; no `guard run` is running to carry it out now: "
                "it runs when one starts"
            )
        row = await self._settled(cmd)
        if row is None:
            return Outcome(
                f"answer #{cmd.id} is still running after {self.wait:g} s; show_incident "
                f"{inc.id} shows its progress"
            )
        return Outcome(row.outcome, error=row.status == CommandStatus.failed)

    async def _settled(self, cmd: HumanCommand) -> HumanCommand | None:
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            row = await asyncio.to_thread(self._command, cmd.id)
            if row is not None and row.status in (CommandStatus.done, CommandStatus.failed):
                return row
            await asyncio.sleep(POLL)
        return None

    def _command(self, command_id: int | None) -> HumanCommand | None:
        with self.db.session() as session:
            return session.get(HumanCommand, command_id)

    async def _incident(self, args: dict[str, Any]) -> Incident:
        incident_id = _int(args, "incident_id", None)

        def load() -> Incident | None:
            with self.db.session() as session:
                return session.get(Incident, incident_id)

        inc = await asyncio.to_thread(load)
        if inc is None:
            raise ToolError(f"no incident {incident_id}; see list_incidents")
        return inc

    # -- resources ------------------------------------------------------------------------------

    async def read(self, actor: Actor, uri: str) -> Outcome:
        """``guard://incidents/{id}`` (show_incident) or ``guard://skills/{name}``
        (show_skill), authorised, redacted and audited as those tools."""
        kind, _, key = uri.removeprefix("guard://").partition("/")
        if kind == "incidents" and key.isdigit():
            return await self.call(actor, "show_incident", {"id": int(key)})
        if kind == "skills" and key:
            return await self.call(actor, "show_skill", {"name": key})
        return Outcome(
            f"unknown resource {uri!r}: guard://incidents/{{id}} or guard://skills/{{name}}",
            error=True,
        )


def _bound(inc: Incident, option: str | None, sent: object) -> str | None:
    """The whole digest of the proposal an approval runs (None: it approves a skill). The
    caller must send the digest it read (``sent``, 12 hex digits at least): the queued
    approval carries the proposal's digest, which the running Guard checks again when it
    runs it (``guard.agent.human``), as for ``guard approve --digest``."""
    if sent is not None and (not isinstance(sent, str) or not _HEX.fullmatch(sent)):
        raise ToolError(
            "argument 'digest' must be the proposal's digest as show_incident gives it "
            "(proposal.digest: 12 to 64 hex digits)"
        )
    shown = list(inc.details.get("options") or [])
    proposal = inc.details.get("proposal")
    if (option or (shown[0] if shown else None)) != PROPOSAL:
        if sent is not None:
            raise ToolError(
                f"argument 'digest' binds a proposal, and incident #{inc.id}'s option is a "
                "skill: approve it without a digest"
            )
        return None
    if not isinstance(proposal, dict):
        raise ToolError(f"incident #{inc.id} has no proposal; see show_incident")
    now = digest(str(proposal.get("fix", "")))
    where = f"show_incident {inc.id} shows its command"
    if sent is None:
        raise ToolError(
            f"nothing ran: approving incident #{inc.id}'s proposal needs the digest of the "
            f"command you read: {where}; if it is right, send digest={short(now)}"
        )
    if not now.startswith(sent.lower()):
        raise ToolError(
            f"nothing ran: incident #{inc.id}'s proposal is no longer the text you read (you "
            f"sent {sent[:12]}, it is now {short(now)}); {where}: approve that one if it is right"
        )
    return now


def _incident_id(spec: ToolSpec, args: dict[str, Any]) -> int | None:
    key = "incident_id" if spec.incident else "id" if spec.name == "show_incident" else None
    value = args.get(key) if key else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int(args: dict[str, Any], key: str, default: int | None) -> int:
    value = args.get(key, default)
    if value is None:
        raise ToolError(f"argument {key!r} is required (an integer)")
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ToolError(f"argument {key!r} must be an integer")
    try:
        return int(value)
    except ValueError:
        raise ToolError(f"argument {key!r} must be an integer") from None
