"""``guard incidents list|show|split``: read incidents and their timelines from the store;
split a wrongly correlated signal off an incident (``guard.cli.incidents_split``).

``list`` is the command people run most, and at 100,000 incidents its query takes 5 ms while
SQLAlchemy, SQLModel and pydantic-settings take a second to import. So it first tries the fast
path (``guard.cli.incidents_view.fast_listing``; ``guard.cli.fastlist`` runs it before Typer
is even imported) and only when that cannot answer loads the settings and the ORM as before;
both hand the same rows to one renderer, so the output is the same to the byte.
``GUARD_NO_FAST_READ=1`` forces the ORM path. The ORM is imported inside the functions that
use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from guard.cli.common import ConfigOption, database, echo, fail, out, settings_from
from guard.cli.incidents_split import print_related, split
from guard.cli.incidents_view import (
    AnyIncident,
    fast_listing,
    incident_dict,
    print_listing,
    proposal_of,
    template_ids,
)
from guard.domain.records import IncidentState
from guard.util.commandtext import digest, short
from guard.util.textsafe import printable

if TYPE_CHECKING:
    from sqlmodel import Session

    from guard.config import Settings
    from guard.reports.counts import Counts
    from guard.store.escalation import IncidentAck
    from guard.store.models import Incident, IncidentTimeline

app = typer.Typer(help="List and inspect incidents.", no_args_is_help=True)
app.command("split")(split)


def templates_of(session: Session, incidents: Sequence[Incident]) -> dict[int, str]:
    """The current text of the templates ``incidents`` were grouped by, by template id."""
    from sqlmodel import col, select

    from guard.store.models import LogTemplate

    wanted = template_ids(incidents)
    if not wanted:
        return {}
    rows = session.exec(select(LogTemplate).where(col(LogTemplate.id).in_(wanted))).all()
    return {r.id: r.template for r in rows if r.id is not None}


def ack_dict(ack: IncidentAck | None) -> dict[str, str] | None:
    """``show --json``'s ``ack``: who acknowledged the incident's current episode and when
    (ISO 8601), or None."""
    return None if ack is None else {"by": ack.by, "at": ack.at.isoformat()}


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
    summary: bool = typer.Option(
        False,
        "--summary",
        help="Also count what the store holds, as the daily report and the web overview do "
        "(awaiting a human and pending approvals now; healed, recovered and learned in the "
        "last 24 hours). With --json: an object with `incidents` and `summary`.",
    ),
    config: str | None = ConfigOption,
) -> None:
    """List incidents, newest first."""
    if summary:
        _list_with_summary(config, state, limit, as_json)
        return
    states = [s.value for s in state]
    found = None if os.environ.get("GUARD_NO_FAST_READ") else fast_listing(config, states, limit)
    rows, templates = found if found is not None else _orm_list(config, state, limit)[:2]
    print_listing(rows, templates, as_json=as_json, echo=echo)


def _orm_list(
    config: str | None, state: list[IncidentState], limit: int, *, summary: bool = False
) -> tuple[Sequence[AnyIncident], dict[int, str], Counts | None]:
    """The listing through the settings model and the ORM (creating the store if need be),
    and with ``summary`` the figures ``guard.reports.counts`` defines, from the same store."""
    from sqlmodel import col, select

    from guard.reports import counts
    from guard.store.models import Incident

    settings = settings_from(config, logging=False)
    db = database(settings, read_only=True)
    with db.session() as session:
        query = select(Incident).order_by(col(Incident.id).desc()).limit(limit)
        if state:
            query = query.where(col(Incident.state).in_(state))
        rows = session.exec(query).all()
        figures = counts.last_day(session) if summary else None
        return rows, templates_of(session, rows), figures


def _list_with_summary(
    config: str | None, state: list[IncidentState], limit: int, as_json: bool
) -> None:
    """The listing, then the figures the daily report and the web overview show."""
    from guard.reports.counts import summary_text

    rows, templates, figures = _orm_list(config, state, limit, summary=True)
    assert figures is not None
    if as_json:
        listed = [incident_dict(r, templates) for r in rows]
        echo(json.dumps({"incidents": listed, "summary": figures.as_dict()}, indent=2))
        return
    print_listing(rows, templates, as_json=False, echo=echo)
    out.print(summary_text(figures), markup=False, soft_wrap=True)


def _ends(settings: Settings, inc: Incident) -> str:
    """How the incident ends (``guard.incidents.ending``), by its monitor's playbook entry."""
    from guard.incidents.ending import ends_for
    from guard.playbooks import load_playbooks

    try:
        specs = {m.id: m for book in load_playbooks(settings.playbooks_dir) for m in book.monitors}
    except Exception:  # a broken playbook: the defaults (check-config names the problem)
        specs = {}
    return ends_for(inc, specs.get(inc.monitor_id), settings.triage.auto_resolve)


@app.command("show")
def show(
    incident_id: int = typer.Argument(..., metavar="ID", help="Incident id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON with the timeline."),
    config: str | None = ConfigOption,
) -> None:
    """Show one incident with its timeline."""
    from sqlmodel import col, select

    from guard.incidents.ack import ack_of
    from guard.store.models import Incident, IncidentTimeline
    from guard.triage.correlation import related_of
    from guard.triage.related_groups import grouped

    settings = settings_from(config, logging=False)
    db = database(settings, read_only=True)
    with db.session() as session:
        inc = session.get(Incident, incident_id)
        if inc is None:
            fail(f"no incident {incident_id} (see `guard incidents list`)")
        related = [g.as_dict() for g in grouped(related_of(session, incident_id))]
        timeline = session.exec(
            select(IncidentTimeline)
            .where(IncidentTimeline.incident_id == incident_id)
            .order_by(col(IncidentTimeline.id))
        ).all()
        templates = templates_of(session, [inc])
        ack = ack_dict(ack_of(session, inc))
    ends = _ends(settings, inc)
    if as_json:
        echo(
            json.dumps(
                {
                    **incident_dict(inc, templates),
                    "ack": ack,
                    "ends": ends,
                    "related": related,
                    "timeline": [timeline_dict(t) for t in timeline],
                },
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
        ("ends", ends),
        ("message", inc.message),
        *([("stream", str(inc.details["stream"]))] if "stream" in (inc.details or {}) else []),
        *([("template", t)] if (t := incident_dict(inc, templates)["template"]) else []),
        *(
            [
                (
                    "proposal",
                    f"{p['fix']}  (by {p['model']}, confidence {p['confidence']}; "
                    f"`guard approve {inc.id} --digest {short(digest(str(p['fix'])))}` "
                    f"runs exactly this): {p['reason']}",
                )
            ]
            if (p := proposal_of(inc))
            else []
        ),
    ]:
        out.print(f"  {label:<12} {printable(value)}", markup=False, soft_wrap=True)
    if evidence := str((inc.details or {}).get("evidence") or ""):
        out.print("  evidence:")  # the whole multi-line event, redacted and capped
        for line in evidence.splitlines():
            out.print(f"    {printable(line, newlines=False)}", markup=False, soft_wrap=True)
    print_related(related)
    out.print("  timeline:")
    for t in timeline:
        move = f" ({t.from_state} -> {t.to_state})" if t.from_state else ""
        out.print(
            f"    {t.at:%Y-%m-%d %H:%M:%S} {t.type}{move}  {printable(t.message)}",
            markup=False,
            soft_wrap=True,
        )
