"""``guard incidents list|show``: read incidents and their timelines from the store.

``list`` is the command people run most, and at 100,000 incidents its query takes 5 ms while
SQLAlchemy, SQLModel and pydantic-settings take a second to import. So it first tries the fast
path (``guard.store.fastconfig`` resolves the settings it needs, ``guard.store.fastread`` runs
the query on the DB-API) and only when that cannot answer loads the settings and the ORM as
before; both hand the same rows to one renderer, so the output is the same to the byte.
``GUARD_NO_FAST_READ=1`` forces the ORM path. The ORM is imported inside the functions that
use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text

from guard.cli.common import ConfigOption, database, echo, fail, out, settings_from
from guard.records import IncidentState
from guard.redact import redact
from guard.textsafe import printable

if TYPE_CHECKING:
    from sqlmodel import Session

    from guard.store.fastread import IncidentRow
    from guard.store.models import Incident, IncidentTimeline

    AnyIncident = Incident | IncidentRow

app = typer.Typer(help="List and inspect incidents.", no_args_is_help=True)


def incident_dict(inc: AnyIncident, templates: dict[int, str] | None = None) -> dict[str, Any]:
    """The JSON shape of an incident (a contract: fields may be added, never renamed).

    ``template`` is the event template its log lines were grouped by (its current text; None
    for incidents not grouped by template), from ``templates`` (``templates_of``).
    """
    template_id = inc.details.get("template_id") if isinstance(inc.details, dict) else None
    return {
        "id": inc.id,
        "state": inc.state,
        "source": inc.source,
        "target": inc.target,
        "kind": inc.kind,
        "severity": inc.severity,
        "count": inc.count,
        "fingerprint": inc.fingerprint,
        "title": inc.title,
        "message": inc.message,
        "monitor_id": inc.monitor_id,
        "opened_at": inc.opened_at.isoformat(),
        "first_seen": inc.first_seen.isoformat(),
        "last_seen": inc.last_seen.isoformat(),
        "resolved_at": inc.resolved_at.isoformat() if inc.resolved_at else None,
        "flapping": inc.flapping,
        "reopen_count": inc.reopen_count,
        "details": inc.details,
        "template": (templates or {}).get(template_id) if isinstance(template_id, int) else None,
        "proposal": proposal_of(inc),
    }


def proposal_of(inc: AnyIncident) -> dict[str, Any] | None:
    """A model's proposed fix (``fix``, ``reason``, ``confidence``, ``model``), or None."""
    found = inc.details.get("proposal") if isinstance(inc.details, dict) else None
    if not isinstance(found, dict):
        return None
    return {k: found.get(k) for k in ("fix", "reason", "confidence", "model")}


def template_ids(incidents: Sequence[AnyIncident]) -> list[int]:
    """The ids of the templates ``incidents`` were grouped by."""
    ids = {i.details.get("template_id") for i in incidents if isinstance(i.details, dict)}
    return [i for i in ids if isinstance(i, int)]


def templates_of(session: Session, incidents: Sequence[Incident]) -> dict[int, str]:
    """The current text of the templates ``incidents`` were grouped by, by template id."""
    from sqlmodel import col, select

    from guard.store.models import LogTemplate

    wanted = template_ids(incidents)
    if not wanted:
        return {}
    rows = session.exec(select(LogTemplate).where(col(LogTemplate.id).in_(wanted))).all()
    return {r.id: r.template for r in rows if r.id is not None}


def timeline_dict(t: IncidentTimeline) -> dict[str, Any]:
    return {
        "at": t.at.isoformat(),
        "type": t.type,
        "from_state": t.from_state,
        "to_state": t.to_state,
        "message": t.message,
        "data": t.data,
    }


@app.command("list")
def list_incidents(
    state: list[IncidentState] = typer.Option(
        [], "--state", "-s", help="Only incidents in this state (repeatable)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array."),
    limit: int = typer.Option(200, "--limit", help="At most this many, newest first."),
    config: str | None = ConfigOption,
) -> None:
    """List incidents, newest first."""
    found = None if os.environ.get("GUARD_NO_FAST_READ") else _fast_list(config, state, limit)
    rows, templates = found if found is not None else _orm_list(config, state, limit)
    if as_json:
        echo(json.dumps([incident_dict(r, templates) for r in rows], indent=2))
        return
    if not rows:
        out.print("no incidents")
        return
    table = Table("id", "state", "severity", "count", "title", "last seen", box=None)
    for r in rows:
        table.add_row(
            str(r.id),
            r.state,
            r.severity,
            str(r.count),
            Text(printable(redact(r.title), newlines=False)),  # data, never markup
            r.last_seen.strftime("%Y-%m-%d %H:%M:%S"),
        )
    out.print(table)


def _fast_list(
    config: str | None, state: list[IncidentState], limit: int
) -> tuple[Sequence[AnyIncident], dict[int, str]] | None:
    """The listing from ``guard.store.fastread``, or None when the ORM path must answer."""
    from guard.redact import use as use_policy
    from guard.store import fastconfig, fastread

    resolved = fastconfig.resolve(config)
    if resolved is None:
        return None
    found = fastread.list_incidents(
        resolved.database_url, [s.value for s in state], limit, template_ids
    )
    if found is None:
        return None
    use_policy(resolved.policy())
    return found.rows, found.templates


def _orm_list(
    config: str | None, state: list[IncidentState], limit: int
) -> tuple[Sequence[AnyIncident], dict[int, str]]:
    from sqlmodel import col, select

    from guard.store.models import Incident

    settings = settings_from(config, logging=False)
    db = database(settings)
    with db.session() as session:
        query = select(Incident).order_by(col(Incident.id).desc()).limit(limit)
        if state:
            query = query.where(col(Incident.state).in_(state))
        rows = session.exec(query).all()
        return rows, templates_of(session, rows)


@app.command("show")
def show(
    incident_id: int = typer.Argument(..., metavar="ID", help="Incident id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON with the timeline."),
    config: str | None = ConfigOption,
) -> None:
    """Show one incident with its timeline."""
    from sqlmodel import col, select

    from guard.store.models import Incident, IncidentTimeline

    settings = settings_from(config, logging=False)
    db = database(settings)
    with db.session() as session:
        inc = session.get(Incident, incident_id)
        if inc is None:
            fail(f"no incident {incident_id} (see `guard incidents list`)")
        timeline = session.exec(
            select(IncidentTimeline)
            .where(IncidentTimeline.incident_id == incident_id)
            .order_by(col(IncidentTimeline.id))
        ).all()
        templates = templates_of(session, [inc])
    if as_json:
        echo(
            json.dumps(
                {**incident_dict(inc, templates), "timeline": [timeline_dict(t) for t in timeline]},
                indent=2,
            )
        )
        return
    head = Text(f"#{inc.id} {printable(inc.title, newlines=False)}", style="bold")
    out.print(head + Text(f"  ({inc.state}, {inc.severity})"))
    for label, value in [
        ("target", inc.target),
        ("source", f"{inc.source} (monitor {inc.monitor_id})"),
        ("count", str(inc.count)),
        ("opened", inc.opened_at.isoformat()),
        ("last seen", inc.last_seen.isoformat()),
        ("fingerprint", inc.fingerprint),
        ("message", inc.message),
        *([("template", t)] if (t := incident_dict(inc, templates)["template"]) else []),
        *(
            [
                (
                    "proposal",
                    f"{p['fix']}  (by {p['model']}, confidence {p['confidence']}; "
                    f"`guard approve {inc.id}` runs it): {p['reason']}",
                )
            ]
            if (p := proposal_of(inc))
            else []
        ),
    ]:
        out.print(f"  {label:<12} {printable(value)}", markup=False, soft_wrap=True)
    out.print("  timeline:")
    for t in timeline:
        move = f" ({t.from_state} -> {t.to_state})" if t.from_state else ""
        out.print(
            f"    {t.at:%Y-%m-%d %H:%M:%S} {t.type}{move}  {printable(t.message)}",
            markup=False,
            soft_wrap=True,
        )
