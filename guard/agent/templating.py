"""Render step arguments: Jinja2 templates over the incident, in a sandboxed environment.

Values interpolated into ``run`` commands are shell-quoted (an attacker controls log lines, and
so incident messages); action arguments are structured and rendered as plain strings.
"""

from __future__ import annotations

import shlex
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from guard.actions.base import ActionError

_plain = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
_shell = SandboxedEnvironment(
    undefined=StrictUndefined, autoescape=False,
    finalize=lambda v: shlex.quote(str(v)) if isinstance(v, str) else v,
)


def incident_context(incident: Any) -> dict[str, Any]:
    """The names a template may use: ``incident.target``, ``incident.details.exit_code``..."""
    return {"incident": {
        "id": incident.id, "target": incident.target, "kind": incident.kind,
        "source": incident.source, "message": incident.message, "severity": incident.severity,
        "monitor_id": incident.monitor_id, "count": incident.count,
        "details": dict(incident.details or {}),
    }}


def render(text: str, context: dict[str, Any], *, shell: bool = False) -> str:
    try:
        return (_shell if shell else _plain).from_string(text).render(context)
    except TemplateError as exc:
        raise ActionError(f"template {text!r}: {exc}") from None


def render_args(args: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        out[key] = render(value, context) if isinstance(value, str) else value
    return out
