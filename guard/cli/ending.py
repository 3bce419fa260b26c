"""``guard resolve|mute|unmute ID`` and ``guard silence|silences``: people end incidents, or stop
hearing about them, from the shell as from the console, MCP and the chat channels.

``resolve``, ``mute`` and ``unmute`` are answers on an incident: queued through the gate like
``guard deny`` (``guard.cli.human.answer``) and carried out by the agent in the incident's
worker. A silence is not about one incident: it is written here, through the gate (verb
``silence``, operator), and the agent applies it to each incident it matches.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import typer

from guard.cli.common import ConfigOption, database, fail, out, settings_from
from guard.cli.human import WaitOption, answer, cli_actor
from guard.domain.exceptions import GuardError
from guard.incidents import silences
from guard.incidents.gate import NotAuthorised
from guard.notify.running_gate import gate_from_settings


def _seconds(text: str, option: str) -> float:
    try:
        return silences.seconds_of(text, option)
    except GuardError as exc:
        fail(str(exc))


IncidentArg = typer.Argument(..., metavar="INCIDENT")


def _answer(verb: str, help_: str) -> Callable[..., None]:
    """The command that queues ``verb`` on an incident, with ``help_`` as its help."""

    def command(
        incident_id: int = IncidentArg, wait: float = WaitOption, config: str | None = ConfigOption
    ) -> None:
        answer(config, incident_id, verb, wait=wait)

    command.__doc__ = help_
    return command


resolve = _answer(
    "resolve",
    """Resolve an incident you know is over (operator role); it opens again if the fault
    fires again.""",
)
unmute = _answer(
    "unmute",
    """End the mutes of an incident's target (operator role); a muted incident is asked
    about again.""",
)


def mute(
    incident_id: int = IncidentArg,
    for_: str | None = typer.Option(
        None,
        "--for",
        metavar="D",
        help="How long (e.g. 30m, 2h; default: the chat's mute_for, 1h).",
    ),
    wait: float = WaitOption,
    config: str | None = ConfigOption,
) -> None:
    """Mute an incident's target (operator role): recorded, but nobody is asked or paged
    until the mute ends."""
    fix = str(_seconds(for_, "--for")) if for_ is not None else None
    answer(config, incident_id, "mute", fix=fix, wait=wait)


def silence(
    matchers: list[str] = typer.Argument(
        ..., metavar="MATCHERS...", help="NAME=VALUE, NAME!=VALUE, NAME=~REGEX or NAME!~REGEX."
    ),
    for_: str = typer.Option(..., "--for", metavar="D", help="How long (e.g. 2h)."),
    comment: str = typer.Option("", "--comment", help="Why (shown by `guard silences`)."),
    config: str | None = ConfigOption,
) -> None:
    """Silence incidents matching service, kind, target or labels for a while (operator
    role): recorded, nobody asked or paged."""
    settings = settings_from(config)
    db = database(settings)
    try:
        made = silences.create(
            db,
            matchers,
            silences.seconds_of(for_, "--for"),
            cli_actor(),
            gate_from_settings(settings, db),
            comment=comment,
        )
    except NotAuthorised as exc:
        fail(f"refused: {exc}")
    except GuardError as exc:
        fail(str(exc))
    out.print(str(made), markup=False, soft_wrap=True)


def list_silences(
    expire: int | None = typer.Option(None, "--expire", metavar="ID", help="End silence ID now."),
    everything: bool = typer.Option(False, "--all", help="Ended silences too (the newest 50)."),
    as_json: bool = typer.Option(False, "--json"),
    config: str | None = ConfigOption,
) -> None:
    """The silences in force (--all: ended ones too), or --expire ID (operator role)."""
    settings = settings_from(config)
    db = database(settings)
    if expire is not None:
        try:
            row = silences.expire(db, expire, cli_actor(), gate_from_settings(settings, db))
        except NotAuthorised as exc:
            fail(f"refused: {exc}")
        except GuardError as exc:
            fail(str(exc))
        out.print(silences.expired(row), markup=False)
        return
    rows = [silences.as_dict(s) for s in silences.listed(db, everything=everything)]
    if as_json:
        out.print_json(json.dumps(rows))
        return
    if not rows:
        out.print("no silences in force" + ("" if everything else " (--all: ended ones too)"))
        return
    for r in rows:
        state = f"ended {str(r['ended_at'])[:19]}" if r["ended_at"] else "live"
        out.print(
            f"#{r['id']}  {r['matchers']}  until {str(r['expires_at'])[:19]}  by {r['by']}  "
            f"{state}" + (f"  ({r['comment']})" if r["comment"] else ""),
            markup=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    app.command("resolve")(resolve)
    app.command("mute")(mute)
    app.command("unmute")(unmute)
    app.command("silence")(silence)
    app.command("silences")(list_silences)
