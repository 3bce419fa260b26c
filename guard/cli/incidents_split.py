"""``guard incidents split ID SIGNAL``, and how ``incidents show`` prints related signals.

``SIGNAL`` is a related signal's id, as ``guard incidents show ID`` lists it (``#3``), or its
monitor's id when that monitor has one related signal on the incident. A related signal is one
monitor on one target (``guard.triage.related_groups``): it is split whole. The split goes through
the gate Guard runs with (verb ``split``, operator role; the CLI's actor is ``cli:<unix
user>``); a refusal exits 1 and is audited (``guard.triage.split``).
"""

from __future__ import annotations

import getpass
from typing import Any

import typer

from guard.cli.common import ConfigOption, database, fail, out, settings_from
from guard.util.textsafe import printable


def print_related(related: list[dict[str, Any]]) -> None:
    """The human view's ``related:`` block (nothing when there are none)."""
    if not related:
        return
    out.print(f"  related:     {len(related)} signal(s) joined this incident")
    for r in related:
        line = (
            f"    #{r['id']} {', '.join(r['kinds'])} on {r['target']} (monitor {r['monitor']}, "
            f"x{r['count']}, {r['status']}) first {r['first_seen'][:19]} last "
            f"{r['last_seen'][:19]}"
        )
        out.print(printable(line), markup=False, soft_wrap=True)


def _actor() -> Any:
    from guard.incidents.gate import Actor

    try:
        return Actor("cli", getpass.getuser())
    except Exception:
        return Actor("cli", "unknown")


def split(
    incident_id: int = typer.Argument(..., metavar="ID", help="The incident it joined."),
    signal: str = typer.Argument(
        ..., metavar="SIGNAL", help="The related signal's id (incidents show), or its monitor."
    ),
    config: str | None = ConfigOption,
) -> None:
    """Split a related signal off an incident: it becomes its own incident, and that pair is
    never joined again."""
    from guard.incidents.gate import NotAuthorised
    from guard.notify.running_gate import gate_from_settings
    from guard.triage.split import SplitError
    from guard.triage.split import split as split_off

    settings = settings_from(config)
    db = database(settings)
    try:
        done = split_off(
            db, incident_id, signal, actor=_actor(), gate=gate_from_settings(settings, db)
        )
    except NotAuthorised as exc:
        fail(f"refused: {exc}")
    except SplitError as exc:
        fail(str(exc))
    made = done.incident_ids or (done.incident_id,)
    now = ", ".join(f"#{i}" for i in made)
    out.print(
        printable(
            f"split {done.signal} off incident #{done.root_id}: it is incident"
            f"{'s' if len(made) > 1 else ''} {now} now, and will not be joined to "
            f"#{done.root_id}'s fault again"
        ),
        markup=False,
        soft_wrap=True,
    )
