"""The ``silence`` and ``silences`` MCP tools: ``guard silence MATCHERS --for D`` and
``guard silences [--all] [--expire ID]`` for an MCP caller. ``GuardTools`` has already asked the
gate the tool's verb (operator); this parses the arguments and calls the one place silences are
made and expired (``guard.incidents.silences``), which asks the gate again in its transaction,
audits (``human.silence``, ``human.unsilence``) and answers in the CLI's words."""

from __future__ import annotations

import json
from typing import Any

from guard.agent.tools import ToolError
from guard.domain.exceptions import GuardError
from guard.incidents import silences
from guard.incidents.gate import Actor, Gate, NotAuthorised
from guard.store.db import Database


def seconds(text: object) -> float:
    """The ``for`` of ``silence`` and ``mute``, validated as the CLI's ``--for``."""
    if not isinstance(text, str):
        raise ToolError("argument 'for' must be a string, e.g. 30m or 2h")
    try:
        return silences.seconds_of(text, "for")
    except GuardError as exc:
        raise ToolError(str(exc)) from None


def silence(db: Database, gate: Gate, actor: Actor, args: dict[str, Any]) -> str:
    """Make a silence of ``args['matchers']`` for ``args['for']``; what it says it did."""
    matchers = args.get("matchers")
    if isinstance(matchers, str):
        matchers = matchers.split()  # `service=api kind=disk_full`, as the console's form
    if not isinstance(matchers, list) or not all(isinstance(m, str) for m in matchers):
        raise ToolError(
            "argument 'matchers' must be a list of matchers, e.g. [\"service=api\", "
            '"kind=disk_full"]'
        )
    comment = args.get("comment", "")
    if not isinstance(comment, str):
        raise ToolError("argument 'comment' must be a string")
    length = seconds(args.get("for"))
    try:
        made = silences.create(db, matchers, length, actor, gate, comment=comment)
    except NotAuthorised:
        raise
    except GuardError as exc:  # a bad matcher or duration: the CLI's words
        raise ToolError(str(exc)) from None
    return str(made)


def listed(db: Database, gate: Gate, actor: Actor, args: dict[str, Any]) -> str:
    """The live silences as JSON (``all``: ended ones too), or end silence ``expire``."""
    expire = args.get("expire")
    if expire is not None:
        if isinstance(expire, bool) or not isinstance(expire, int):
            raise ToolError("argument 'expire' must be a silence's id (an integer)")
        try:
            return silences.expired(silences.expire(db, expire, actor, gate))
        except NotAuthorised:
            raise
        except GuardError as exc:
            raise ToolError(str(exc)) from None
    rows = silences.listed(db, everything=args.get("all") is True)
    return json.dumps([silences.as_dict(s) for s in rows], indent=1)
