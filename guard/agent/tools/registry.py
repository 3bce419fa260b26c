"""Guard's tools, defined once: name, description, JSON schema, the role a caller needs, bounds.

Two faces read this table. The model's investigation (``guard.agent.investigation``) offers the
seven marked ``investigation`` in OpenAI's function form (``TOOLS``), bound to the incident it
investigates, so they take no ``incident_id``. MCP (``guard.mcp``) offers them all with
``input_schema(spec)``: the same properties, plus ``incident_id`` for a tool bound to an
incident (``incident``), and arguments with a default (``defaults``) optional.

Roles (``guard.access.roles``): reading is ``viewer``; ``sandbox_run``, ``probe`` and
``propose_remedy`` are ``operator`` (they run a command in the diagnostics sandbox or a
read-only probe, or add an option a human must approve; none changes the system), and so
are ``resolve``, ``mute``, ``unmute``, ``silence`` and ``silences`` (they end incidents or
hush them, as ``guard resolve|mute|unmute|silence|silences`` do; managing silences, listing
them included, is an operator's, a viewer sees them on the console's ``/silences``);
``approve`` and ``deny`` are ``approver``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guard.access.roles import Role

MAX_LOG_LINES = 200
MAX_INCIDENTS = 100  # list_incidents' limit at most
INCIDENT_ID = {"type": "integer", "minimum": 1, "description": "the incident's id"}


@dataclass(frozen=True)
class ToolSpec:
    """One tool, as both faces describe it."""

    name: str
    description: str
    properties: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    role: Role = Role.viewer
    incident: bool = False  # bound to one incident: MCP asks for its ``incident_id``
    investigation: bool = False  # one of the model investigation's six
    defaults: dict[str, Any] = field(default_factory=dict)  # optional outside the investigation
    verb: str = "view"  # what the gate is asked (``guard.access.roles.NEEDS`` gives ``role``)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_incidents",
        "Incidents, newest first: id, state, severity, target, title.",
        {
            "state": {
                "type": "string",
                "description": "only incidents in this state (open, diagnosing, "
                "awaiting_human, remediating, escalated, resolved, muted), or `active`: "
                "every state but resolved and muted",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_INCIDENTS},
        },
        defaults={"limit": 20},
    ),
    ToolSpec(
        "show_incident",
        "One incident: its facts, the options a human was offered (a proposal with its "
        "digest), the other checks that saw the same fault (related), its newest timeline "
        "entries and remedies.",
        {"id": INCIDENT_ID},
        ("id",),
    ),
    ToolSpec(
        "sandbox_run",
        "Run a read-only shell command in the incident's hardened diagnostics "
        "sandbox (busybox/coreutils, no root); returns exit code and output.",
        {"command": {"type": "string", "description": "a shell command line"}},
        ("command",),
        role=Role.operator,
        incident=True,
        investigation=True,
        verb="sandbox_run",
    ),
    ToolSpec(
        "probe",
        "Run a read-only probe from Guard itself (no shell, no sandbox): probe.http URL, "
        "probe.tcp HOST:PORT, probe.dns NAME, probe.tls HOST[:PORT], probe.postgres SECRET "
        "[queries=connections,locks,replication,sizes], probe.redis HOST:PORT "
        "[section=memory]; only hosts the probes: settings grant.",
        {"probe": {"type": "string", "description": "the probe as a human writes it"}},
        ("probe",),
        role=Role.operator,
        incident=True,
        investigation=True,
        verb="probe",
    ),
    ToolSpec(
        "recent_logs",
        "The incident target's most recent log lines.",
        {"lines": {"type": "integer", "description": f"how many (1-{MAX_LOG_LINES})"}},
        ("lines",),
        incident=True,
        investigation=True,
        defaults={"lines": 50},
    ),
    ToolSpec(
        "search_memory",
        "Past incidents similar to a text, and what resolved them.",
        {"query": {"type": "string"}},
        ("query",),
        investigation=True,
    ),
    ToolSpec("list_skills", "The skills (known remedies) Guard has.", investigation=True),
    ToolSpec(
        "show_skill",
        "One skill's description and steps.",
        {"name": {"type": "string"}},
        ("name",),
        investigation=True,
    ),
    ToolSpec(
        "propose_remedy",
        "Propose the fix a human should approve; ends the investigation. "
        "`fix` is an action such as `docker.restart api` or a shell command for the sandbox.",
        {
            "fix": {"type": "string"},
            "reason": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        ("fix", "reason", "confidence"),
        role=Role.operator,
        incident=True,
        investigation=True,
        defaults={"confidence": 0.5},
        verb="propose",
    ),
    ToolSpec(
        "approve",
        "Approve an option shown on the incident (default: the first; `proposal` for a "
        "proposed fix): Guard runs it, verifies recovery and learns a fix that cured it. A "
        "proposal runs only with its `digest` (show_incident's proposal.digest), and only "
        "while it is still that text.",
        {
            "option": {"type": "string", "description": "a skill's name, or `proposal`"},
            "digest": {
                "type": "string",
                "description": "the proposal's digest as show_incident gave it (at least its "
                "first 12 hex digits); required to approve a proposal",
            },
        },
        role=Role.approver,
        incident=True,
        verb="approve",
    ),
    ToolSpec(
        "deny",
        "Refuse the proposed remedy: nothing runs, the incident escalates to humans.",
        role=Role.approver,
        incident=True,
        verb="deny",
    ),
    ToolSpec(
        "resolve",
        "Resolve an incident you know is over; it opens again if the fault fires again.",
        role=Role.operator,
        incident=True,
        verb="resolve",
    ),
    ToolSpec(
        "mute",
        "Mute the incident's target: recorded, but nobody is asked or paged until it ends.",
        {"for": {"type": "string", "description": "how long, e.g. 30m or 2h (default 1h)"}},
        role=Role.operator,
        incident=True,
        verb="mute",
    ),
    ToolSpec(
        "unmute",
        "End the mutes of the incident's target; a muted incident is asked about again.",
        role=Role.operator,
        incident=True,
        verb="unmute",
    ),
    ToolSpec(
        "silence",
        "Silence every incident matching the matchers for a while, now and later (incidents "
        "already asking a human too): recorded, but nobody is asked or paged until it expires.",
        {
            "matchers": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "NAME=VALUE, NAME!=VALUE, NAME=~REGEX or NAME!~REGEX; NAME is "
                "service, kind, target, source, monitor, severity or a label; all must match",
            },
            "for": {"type": "string", "description": "how long, e.g. 2h"},
            "comment": {"type": "string", "description": "why (shown with the silence)"},
        },
        ("matchers", "for"),
        role=Role.operator,
        defaults={"comment": ""},
        verb="silence",
    ),
    ToolSpec(
        "silences",
        "The silences in force (JSON: id, matchers, expires_at, by, comment), or end one now.",
        {
            "expire": {"type": "integer", "minimum": 1, "description": "end this silence now"},
            "all": {"type": "boolean", "description": "ended silences too (the newest 50)"},
        },
        role=Role.operator,
        verb="silence",
    ),
)
BY_NAME = {s.name: s for s in SPECS}


def _function(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": {
                "type": "object",
                "properties": spec.properties,
                "required": list(spec.required),
            },
        },
    }


TOOLS: list[dict[str, Any]] = [_function(s) for s in SPECS if s.investigation]
"""The investigation's tools, in OpenAI's function form."""
TOOL_NAMES = [t["function"]["name"] for t in TOOLS]


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool's JSON schema outside an investigation (MCP): ``incident_id`` first for a tool
    bound to an incident; an argument with a default is optional."""
    props = ({"incident_id": INCIDENT_ID} if spec.incident else {}) | spec.properties
    required = ["incident_id"] * spec.incident + [
        r for r in spec.required if r not in spec.defaults
    ]
    return {"type": "object", "properties": props, "required": required}
