"""The model's investigation: a bounded tool-calling loop that ends in a proposal, or not.

It runs when no trusted skill applies and a model is configured (``llm.provider``), before a
human is asked. The model reads the incident and the evidence, calls read-only tools
(``guard.agent.tools``), and may propose one fix. Nothing it proposes runs here: the proposal
becomes the first option shown to the human.

Bounds: ``llm.max_steps`` model turns (the last is offered no tools, to force an answer); a
token budget and a wall-clock budget per incident; an identical repeated tool call is refused;
each tool result is cut to ``llm.tool_result_chars`` (the model is told); older tool output is
compacted once the conversation passes ``llm.context_chars``. Temperature 0. A provider that
fails (after retries and failover), times out or runs out of budget ends the investigation
with what was found so far; the human gets it either way.

What the model reads from outside Guard (the incident's facts, the evidence, every tool's
output) is fenced as untrusted data (``guard.agent.fencing``): a log line may be written to
steer it. Its ``sandbox_run`` has the playbook's ``investigation_sandbox`` grants only, never
the remedy's, so an obeyed injection finds no secret to leak.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from guard.agent.fencing import Fence
from guard.agent.tools import TOOL_NAMES, Proposal, Toolbox, ToolError
from guard.config import LLMSettings
from guard.llm import Message, ModelProvider, ProviderError
from guard.llm.mcp_servers import OpenServers, ServerError, ToolServers
from guard.redact import Redactor
from guard.store.models import Incident

SYSTEM = (
    "You are Guard's incident investigator. Find the cause of the incident with the tools "
    "(all read-only: nothing you run changes the system), then call propose_remedy exactly "
    "once. A fix is either a Guard action (docker.restart NAME, docker.start NAME, "
    "docker.stop NAME, http.request URL, ...) or a shell command run in the sandbox. A human "
    "approves it before anything runs; Guard then verifies recovery. Be brief; do not repeat "
    "a call you already made."
)


def system_prompt(fence: Fence, external: OpenServers | None = None) -> str:
    writes = external.writes if external is not None else []
    if not writes:
        return f"{SYSTEM} {fence.rule}"
    named = ", ".join(f"{t.server} {t.name}" for t in writes)
    return (
        f"{SYSTEM} These MCP tools change something, so you cannot call them; you may propose "
        f"one as the fix, written `mcp.call SERVER TOOL {{json arguments}}`: {named}. "
        f"{fence.rule}"
    )


LAST_TURN = (
    "This is your last turn and no tools are available. State the most likely cause "
    "and the fix you would propose, in two sentences."
)
KEEP_RECENT = 2  # tool results never compacted: the newest ones
COMPACT_TO = 200


@dataclass
class Investigation:
    """What one investigation found and cost."""

    model: str
    messages: list[Message]
    proposal: Proposal | None = None
    stop_reason: str = "answered"
    """proposed, answered, max_steps, token_budget, wall_clock, error"""
    error: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall: float = 0.0
    tool_stats: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def usage(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "wall_seconds": round(self.wall, 3),
        }

    def findings(self) -> str:
        """For the human: what the tools showed, the model's last words, the proposal."""
        lines = [
            f"Model investigation ({self.model}): {self.stop_reason}"
            + (f" ({self.error})" if self.error else "")
        ]
        lines += self.notes
        last = next(
            (
                m.get("content")
                for m in reversed(self.messages)
                if m["role"] == "assistant" and m.get("content")
            ),
            None,
        )
        if last:
            lines.append(f"model: {str(last)[:600]}")
        if self.proposal is not None:
            p = self.proposal
            lines.append(f"proposed fix: {p.fix} (confidence {p.confidence:.2f}): {p.reason}")
        return "\n".join(lines)

    def count(self, tool: str, ok: bool) -> None:
        stats = self.tool_stats.setdefault(tool, {"count": 0, "success": 0, "failure": 0})
        stats["count"] += 1
        stats["success" if ok else "failure"] += 1


def incident_prompt(inc: Incident, evidence: str, fence: Fence | None = None) -> str:
    """The incident for the model; with ``fence``, what came from outside Guard is fenced."""
    facts = f"title: {inc.title}\ntarget: {inc.target}\nmessage: {inc.message}"
    found = evidence or "(none)"
    if fence is not None:
        facts, found = fence.wrap(facts, "incident"), fence.wrap(found, "evidence")
    return (
        f"Incident #{inc.id}  source: {inc.source}  kind: {inc.kind}  severity: "
        f"{inc.severity}  count: {inc.count}\n{facts}\n\nevidence collected so far:\n{found}"
    )


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[truncated: {len(text) - limit} more characters not shown; "
        "narrow the command, e.g. with grep, head or tail]"
    )


def compact(messages: list[Message], budget: int, fence: Fence | None = None) -> int:
    """Shorten older tool results, oldest first, until the conversation fits ``budget``
    characters (the newest ``KEEP_RECENT`` stay whole; fenced data stays fenced); how many
    were compacted."""
    size = sum(len(json.dumps(m)) for m in messages)
    tools = [m for m in messages if m["role"] == "tool"][: -KEEP_RECENT or None]
    done = 0
    for m in tools:
        if size <= budget:
            break
        content = str(m.get("content") or "")
        if len(content) <= COMPACT_TO or content.startswith("[compacted"):
            continue
        inner = fence.inner(content) if fence is not None else None
        began = content[:COMPACT_TO] if inner is None else inner[:COMPACT_TO]
        if fence is not None and inner is not None:
            began = fence.wrap(began, fence.source(content))
        m["content"] = (
            f"[compacted: {len(content)} characters of older output dropped to fit "
            f"the context; it began:] {began}"
        )
        size -= len(content) - len(m["content"])
        done += 1
    return done


class Investigator:
    def __init__(
        self,
        settings: LLMSettings,
        provider: Callable[[], ModelProvider],
        redactor: Redactor,
        servers: ToolServers | None = None,
    ) -> None:
        self.settings = settings
        self.provider = provider  # a fresh provider (and failover state) per investigation
        self.redactor = redactor
        self.servers = servers  # the team's MCP servers (``llm.mcp_servers``), opened per run

    async def investigate(self, inc: Incident, evidence: str, tools: Toolbox) -> Investigation:
        provider = self.provider()
        try:
            if self.servers is None or not self.servers.servers:
                return await self._loop(provider, inc, evidence, tools, None)
            async with self.servers.open() as external:
                return await self._loop(provider, inc, evidence, tools, external)
        finally:
            await provider.aclose()

    async def _loop(
        self,
        provider: ModelProvider,
        inc: Incident,
        evidence: str,
        tools: Toolbox,
        external: OpenServers | None,
    ) -> Investigation:
        s = self.settings
        started = time.monotonic()
        deadline = started + s.max_wall
        fence = Fence()
        messages: list[Message] = [
            {"role": "system", "content": system_prompt(fence, external)},
            {
                "role": "user",
                "content": self.redactor.redact(incident_prompt(inc, evidence, fence)),
            },
        ]
        found = Investigation(provider.name, messages)
        if external is not None:
            found.notes += [
                f"MCP server {n} unreachable: {w}" for n, w in external.unreachable.items()
            ]
        offered = await tools.offered() + (external.specs(fence.wrap) if external else [])
        seen: set[str] = set()
        try:
            for step in range(s.max_steps):
                last = step == s.max_steps - 1
                if last:
                    messages.append({"role": "user", "content": LAST_TURN})
                if n := compact(messages, s.context_chars, fence):
                    found.notes.append(f"compacted {n} older tool result(s)")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    found.stop_reason = "wall_clock"
                    break
                async with asyncio.timeout(remaining):
                    done = await provider.complete(
                        messages,
                        [] if last else offered,
                        max_tokens=s.max_output_tokens,
                        temperature=0.0,
                    )
                found.model = provider.name
                found.calls += 1
                found.prompt_tokens += done.usage.prompt_tokens
                found.completion_tokens += done.usage.completion_tokens
                messages.append(done.message)
                calls = done.message.get("tool_calls") or []
                if not calls or last:  # on the last turn, a call is not carried out
                    found.stop_reason = "max_steps" if last else "answered"
                    break
                for call in calls:
                    messages.append(
                        await self._call(call, (tools, external), seen, found, deadline, fence)
                    )
                if found.proposal is not None:
                    found.stop_reason = "proposed"
                    break
                if found.prompt_tokens + found.completion_tokens >= s.max_tokens:
                    found.stop_reason = "token_budget"
                    break
            else:
                found.stop_reason = "max_steps"
        except TimeoutError:
            found.stop_reason = "wall_clock"
        except ProviderError as exc:
            found.stop_reason, found.error = "error", self.redactor.redact(str(exc))[:500]
        found.wall = time.monotonic() - started
        _answer_dangling(messages)
        return found

    async def _call(
        self,
        call: dict[str, Any],
        both: tuple[Toolbox, OpenServers | None],
        seen: set[str],
        found: Investigation,
        deadline: float,
        fence: Fence,
    ) -> Message:
        """Carry out one tool call; the tool message answering it."""
        fn = call.get("function") or {}
        name, raw = str(fn.get("name", "")), str(fn.get("arguments") or "{}")
        reply: Message = {"role": "tool", "tool_call_id": call.get("id", "")}
        ok, fenced = False, False
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            text = f"error: the arguments are not valid JSON ({exc}); send one JSON object"
            args = None
        if args is not None:
            key = name + json.dumps(args, sort_keys=True)
            if key in seen:
                text = (
                    "refused: you already made this exact call; its result is above. "
                    "Try something else, or propose_remedy."
                )
            else:
                seen.add(key)
                text, ok = await self._run(name, args, both, found, deadline)
                fenced = name != "propose_remedy"  # a tool's output: data from outside Guard
        external = both[1]
        known = name in TOOL_NAMES or (external is not None and name in external.tools)
        found.count(name if known else "unknown", ok)
        text = cap(self.redactor.redact(text), self.settings.tool_result_chars)
        if name != "propose_remedy":
            found.notes.append(f"- {name} {raw[:200]}: {' '.join(text.split())[:300]}")
        elif not ok:  # the human hears why, without the command it would not have read whole
            found.notes.append(f"- propose_remedy {text[:400]}")
        source = name if known else "unknown"
        reply["content"] = fence.wrap(text, source) if fenced else text
        return reply

    async def _run(
        self,
        name: str,
        args: dict[str, Any],
        both: tuple[Toolbox, OpenServers | None],
        found: Investigation,
        deadline: float,
    ) -> tuple[str, bool]:
        tools, external = both
        try:
            if name == "propose_remedy":
                found.proposal = tools.proposal(args, found.model)
                return "proposal recorded; a human will decide. Stop here.", True
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                if external is not None and external.owns(name):
                    return await external.call(name, args, self.redactor), True
                return await tools.call(name, args), True
        except (ToolError, ServerError) as exc:
            return f"error: {exc}", False
        except TimeoutError:
            return "error: the investigation's time ran out during this call", False
        except Exception as exc:  # a tool's own failure is the model's information
            return f"error: {type(exc).__name__}: {exc}", False


def _answer_dangling(messages: list[Message]) -> None:
    """Every tool call has its answer (a stored trajectory replays on any API)."""
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    for m in list(messages):
        for call in m.get("tool_calls") or []:
            if call.get("id") not in answered:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id"),
                        "content": "not run: the investigation ended",
                    }
                )
