"""``guard ack ID``: acknowledge an incident, so its escalation steps and reminders stop.

Acknowledging answers nothing: the question stays open for approve, deny or a fix. It goes
through the authorisation gate Guard runs with (verb ``ack``, role operator; the CLI's actor is
``cli:<unix user>``), is audited and shown on the incident's timeline, posts a line in the
question's thread, and queues ``acknowledge`` to every pager the incident triggered.
"""

from __future__ import annotations

import getpass

import typer

from guard.cli.common import ConfigOption, database, fail, out, settings_from
from guard.domain.exceptions import GuardError
from guard.incidents.gate import Actor, NotAuthorised
from guard.notify.escalation import acknowledge
from guard.notify.running_gate import gate_from_settings


def _actor() -> Actor:
    try:
        return Actor("cli", getpass.getuser())
    except Exception:
        return Actor("cli", "unknown")


def ack(
    incident_id: int = typer.Argument(..., metavar="INCIDENT"),
    config: str | None = ConfigOption,
) -> None:
    """Acknowledge an incident: its escalation steps and reminders stop (operator role)."""
    settings = settings_from(config)
    db = database(settings)
    try:
        done = acknowledge(db, incident_id, _actor(), gate_from_settings(settings, db))
    except NotAuthorised as exc:
        fail(f"refused: {exc}")
    except GuardError as exc:
        fail(str(exc))
    when = done.at.isoformat(timespec="seconds")
    if done.first:
        out.print(
            f"incident #{incident_id} acknowledged by {done.by}: escalation and reminders stop",
            markup=False,
        )
    else:
        out.print(f"incident #{incident_id} was already acknowledged by {done.by} at {when}")


def register(app: typer.Typer) -> None:
    app.command("ack")(ack)
