"""Render step arguments: Jinja2 templates over the incident, in a sandboxed environment.

Values interpolated into ``run`` commands are quoted for the shell (an attacker controls log
lines, and so incident messages), and quoted for *where* they land: a bare ``{{ x }}`` becomes
one single-quoted word; inside ``"..."`` its ``$``, backquote, ``"`` and ``\\`` are escaped (a
single-quoted word there would not stop ``$(...)``); inside ``'...'`` its ``'`` is closed and
reopened. Every value is quoted, not only strings: a dict or a list is rendered as JSON, a number
as its digits. Action arguments are structured and rendered as plain strings.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from typing import TYPE_CHECKING, Any

from guard.actions.base import ActionError
from guard.skills.model import Step
from guard.util.shellquote import quote_states

if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

_EXPR = re.compile(r"\{\{(-?)(.*?)(-?)\}\}", re.DOTALL)
_RAW = re.compile(r"\{%-?\s*raw\s*-?%\}.*?\{%-?\s*endraw\s*-?%\}", re.DOTALL)


class _Quoted(str):
    """A value already quoted for its place in the command."""


def _text(value: Any) -> str:
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=str)
    return str(value)


def _bare(value: Any) -> _Quoted:
    return value if isinstance(value, _Quoted) else _Quoted(shlex.quote(_text(value)))


def _in_double(value: Any) -> _Quoted:
    return _Quoted(re.sub(r'([$`"\\])', r"\\\1", _text(value)))


def _in_single(value: Any) -> _Quoted:
    return _Quoted(_text(value).replace("'", "'\\''"))


@cache
def _environments() -> tuple[SandboxedEnvironment, SandboxedEnvironment]:
    """(plain, shell), built with the first step rendered: a ``guard run`` that has run no
    skill has not loaded Jinja2."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    plain = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    shell = SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        finalize=lambda v: "" if v is None else _bare(v),
    )
    shell.filters.update(guard_dq=_in_double, guard_sq=_in_single)
    return plain, shell


def _quote_contexts(text: str) -> str:
    """``text`` with each ``{{ expr }}`` inside ``"..."`` or ``'...'`` piped through the escaper
    for that context (a bare one is quoted by ``finalize``)."""
    exprs = [
        m
        for m in _EXPR.finditer(text)
        if not any(r.start() <= m.start() < r.end() for r in _RAW.finditer(text))
    ]
    blank = list(text)  # the shell's view: template parts are neither quotes nor escapes
    for span in [*(m.span() for m in exprs), *(r.span() for r in _RAW.finditer(text))]:
        blank[span[0] : span[1]] = " " * (span[1] - span[0])
    states = quote_states("".join(blank))
    out, pos = [], 0
    for m in exprs:
        quote = states[m.start()]
        if quote:
            pipe = "guard_dq" if quote == '"' else "guard_sq"
            out += [
                text[pos : m.start()],
                f"{{{{{m.group(1)} ({m.group(2)}) | {pipe} {m.group(3)}}}}}",
            ]
            pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def incident_context(incident: Any) -> dict[str, Any]:
    """The names a template may use: ``incident.target``, ``incident.details.exit_code``..."""
    return {
        "incident": {
            "id": incident.id,
            "target": incident.target,
            "kind": incident.kind,
            "source": incident.source,
            "message": incident.message,
            "severity": incident.severity,
            "monitor_id": incident.monitor_id,
            "count": incident.count,
            "details": dict(incident.details or {}),
        }
    }


def render(text: str, context: dict[str, Any], *, shell: bool = False) -> str:
    from jinja2 import TemplateError

    plain, shell_env = _environments()
    try:
        if shell:
            return shell_env.from_string(_quote_contexts(text)).render(context)
        return plain.from_string(text).render(context)
    except TemplateError as exc:
        raise ActionError(f"template {text!r}: {exc}") from None


def render_args(args: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        out[key] = render(value, context) if isinstance(value, str) else value
    return out


def describe(step: Step, context: dict[str, Any]) -> str:
    """The step as people read it (timeline, audit, evidence), its templates rendered over the
    incident: ``docker.start container={{ incident.target }}`` says nothing about which one.
    The text as written when it cannot be rendered (the step's run reports why)."""
    text = step.describe()
    if "{{" not in text or not context:
        return text
    try:
        return render(text, context)
    except ActionError:
        return text
