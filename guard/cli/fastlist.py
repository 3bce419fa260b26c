"""``guard incidents list`` before Typer is imported: parse, read, print, or decline.

Typer builds its parameters with pydantic and costs ~0.1 s before a command runs; at the
issue-17 goal (300 ms for the whole command) that is a third of it. ``run`` answers only when
it understands every argument exactly as Typer would (``--state/-s S`` repeatable, ``--json``,
``--limit N``, ``--config/-c F``, each also as ``--opt=value`` or ``-sVALUE``) and the fast path
can read the store (``incidents_view.fast_listing``). Otherwise it prints nothing and returns
False, and Typer runs the command as usual: ``--help``, a typo, an invalid state, an unusual
store, shell completion, ``GUARD_NO_FAST_READ=1``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

from guard.domain.records import IncidentState

STATES = frozenset(s.value for s in IncidentState)
_OPTIONS = {
    "--state": "state",
    "-s": "state",
    "--limit": "limit",
    "--config": "config",
    "-c": "config",
}


@dataclass
class Request:
    states: list[str] = field(default_factory=list)
    as_json: bool = False
    limit: int = 200
    config: str | None = None


def parse(args: list[str]) -> Request | None:
    """The request ``args`` make, or None if Typer should judge them."""
    request = Request()
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            request.as_json = True
            continue
        name, value = _split(arg, rest)
        if name is None or value is None:
            return None
        if name == "state":
            if value not in STATES:
                return None
            request.states.append(value)
        elif name == "limit":
            if not re.fullmatch(r"[0-9]{1,9}", value):
                return None
            request.limit = int(value)
        else:
            if not value:
                return None
            request.config = value
    return request


def _split(arg: str, rest: list[str]) -> tuple[str | None, str | None]:
    """``(option, value)`` for ``--opt V``, ``--opt=V`` or ``-oV``; ``(None, None)`` if not."""
    if arg in _OPTIONS:
        if not rest or rest[0].startswith("-"):
            return None, None
        return _OPTIONS[arg], rest.pop(0)
    if arg.startswith("--"):
        opt, eq, value = arg.partition("=")
        return (_OPTIONS.get(opt), value) if eq else (None, None)
    if arg[:2] in ("-s", "-c") and len(arg) > 2 and arg[2] != "=":
        return _OPTIONS[arg[:2]], arg[2:]
    return None, None


def _write(text: str) -> None:
    """``typer.echo`` for ASCII text (``json.dumps`` escapes the rest, and control codes)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run(args: list[str]) -> bool:
    """List incidents as ``guard incidents list ARGS`` would; False if this cannot."""
    if os.environ.get("GUARD_NO_FAST_READ") or any(
        k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ
    ):
        return False
    request = parse(args)
    if request is None:
        return False
    if request.config is None:
        request.config = os.environ.get("GUARD_CONFIG") or None  # the option's envvar
    from guard.cli.incidents_view import fast_listing, print_listing
    from guard.redact import redact

    found = fast_listing(request.config, request.states, request.limit)
    if found is None:
        return False
    rows, templates = found
    try:
        print_listing(rows, templates, as_json=request.as_json, echo=lambda t: _write(redact(t)))
    except BrokenPipeError:  # `guard incidents list | head`: exit 1 quietly, as Click does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    return True
