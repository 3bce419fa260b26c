"""``guard memory search``: find similar past incidents and what resolved them."""

from __future__ import annotations

import json

import typer
from rich.table import Table
from rich.text import Text

from guard.cli.common import ConfigOption, database, echo, out, settings_from
from guard.memory.semantic import SemanticMemory
from guard.store.models import Incident
from guard.util.textsafe import printable

app = typer.Typer(help="Guard's memory of past incidents.", no_args_is_help=True)


@app.command("search")
def search(
    text: str = typer.Argument(..., metavar="TEXT", help="Describe the problem in your words."),
    limit: int = typer.Option(5, "--limit", "-n"),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array."),
    config: str | None = ConfigOption,
) -> None:
    """List past incidents similar to TEXT, best first, with what resolved them."""
    settings = settings_from(config, logging=False)
    db = database(settings)
    hits = SemanticMemory(settings.data_dir / "memory.lance").search(text, limit=limit)
    rows = []
    with db.session() as session:
        for h in hits:
            inc = session.get(Incident, h.incident_id)
            rows.append(
                {
                    "incident_id": h.incident_id,
                    "score": h.score,
                    "title": h.title,
                    "resolution": h.resolution,
                    "skill": h.skill or None,
                    "kind": h.kind,
                    "target": h.target,
                    "state": inc.state if inc else None,
                    "resolved_at": inc.resolved_at.isoformat() if inc and inc.resolved_at else None,
                }
            )
    if as_json:
        echo(json.dumps(rows, indent=2))
        return
    if not rows:
        out.print("no similar incidents remembered yet")
        return
    table = Table("incident", "score", "title", "resolved by", box=None)
    for r in rows:
        table.add_row(
            f"#{r['incident_id']}",
            f"{r['score']:.2f}",
            Text(printable(r["title"], newlines=False)),
            Text(printable(r["resolution"], newlines=False)),
        )
    out.print(table)
