"""How ``guard incidents list`` shows incidents, and its fast path; no Typer, no ORM here.

Both paths (``guard.cli.fastlist`` before Typer, ``guard.cli.incidents`` through it) print
with ``print_listing``, from rows of either kind: ORM ``Incident``s or the fast path's
``IncidentRow``s, which carry the same values (``guard.store.fastread``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from rich.style import Style
from rich.table import Table
from rich.text import Text

from guard.cli import plaintable
from guard.cli.console import out
from guard.redact import redact
from guard.util.textsafe import printable

if TYPE_CHECKING:
    from guard.store.fastread import IncidentRow
    from guard.store.models import Incident

AnyIncident: TypeAlias = "Incident | IncidentRow"
HEADER = ("id", "state", "severity", "count", "title", "last seen")
TEXT_COLUMNS = (False, False, False, False, True, False)  # which cells are Text, not str
BOLD = Style(bold=True)  # Rich's default "table.header"


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


def print_listing(
    rows: Sequence[AnyIncident],
    templates: dict[int, str],
    *,
    as_json: bool,
    echo: Callable[[str], None],
) -> None:
    """The table of ``rows`` (or a JSON array with ``as_json``, written with ``echo``)."""
    if as_json:
        echo(json.dumps([incident_dict(r, templates) for r in rows], indent=2))
        return
    if not rows:
        out.print("no incidents")
        return
    cells = [
        (
            str(r.id),
            str(r.state),
            r.severity,
            str(r.count),
            printable(redact(r.title), newlines=False),  # data, never markup: a Text below
            r.last_seen.strftime("%Y-%m-%d %H:%M:%S"),
        )
        for r in rows
    ]
    styled = out.color_system is not None
    if not styled or (not out.legacy_windows and out.get_style("table.header") == BOLD):
        # what Rich would print, without Rich's cost per cell
        text = plaintable.render(HEADER, cells, TEXT_COLUMNS, out.width, bold_header=styled)
        if text is not None:
            out.file.write(text)
            out.file.flush()
            return
    table = Table(*HEADER, box=None)
    for row in cells:
        table.add_row(*(Text(c) if t else c for c, t in zip(row, TEXT_COLUMNS, strict=True)))
    out.print(table)


def fast_listing(
    config: str | None, states: list[str], limit: int
) -> tuple[Sequence[AnyIncident], dict[int, str]] | None:
    """The listing from the store read directly, or None when the ORM path must answer.

    On success the redaction policy is the one the settings describe, as ``settings_from``
    would have made it."""
    from guard.config import fast as fastconfig
    from guard.redact import use as use_policy
    from guard.store import fastread

    resolved = fastconfig.resolve(config)
    if resolved is None:
        return None
    found = fastread.list_incidents(resolved.database_url, states, limit, template_ids)
    if found is None:
        return None
    use_policy(resolved.policy())
    return found.rows, found.templates
