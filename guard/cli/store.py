"""``guard store stats|prune``: how big the store is, and pruning it by ``store.retention``."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from guard.cli.common import ConfigOption, database, echo, fail, out, settings_from
from guard.domain.durations import format_duration
from guard.store import audit
from guard.store import retention as store_retention

app = typer.Typer(help="The store: its size, and pruning old data.", no_args_is_help=True)


def _size(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:,.1f} MB"


@app.command("stats")
def stats(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    config: str | None = ConfigOption,
) -> None:
    """Rows per table and bytes on disk."""
    settings = settings_from(config, logging=False)
    found = store_retention.stats(database(settings, read_only=True))
    found["retention"] = (
        format_duration(settings.store.retention) if settings.store.retention else None
    )
    if as_json:
        echo(json.dumps(found, indent=2))
        return
    out.print(
        f"{found['backend']} store, {_size(found['bytes'])} on disk; retention "
        f"{found['retention'] or 'off'}; oldest incident {found['oldest_incident'] or '-'}",
        markup=False,
    )
    table = Table("table", "rows", "size", box=None)
    for name, t in found["tables"].items():
        table.add_row(name, f"{t['rows']:,}", "" if t["bytes"] is None else _size(t["bytes"]))
    out.print(table)


@app.command("prune")
def prune(config: str | None = ConfigOption) -> None:
    """Remove resolved incidents (and what hangs on them) older than store.retention now;
    `guard run` does it daily."""
    settings = settings_from(config, logging=False)
    if not settings.store.retention:
        fail("store.retention is 0 (keep everything): nothing to prune")
    done = store_retention.prune(
        database(settings), settings.store.retention, settings.data_dir / audit.ANCHORS, actor="cli"
    )
    rows = ", ".join(f"{n:,} {t}" for t, n in sorted(done.rows.items())) or "nothing"
    cut = f"; audit chain cut after #{done.audit_cut}" if done.audit_cut else ""
    out.print(
        f"pruned what was older than {done.cutoff:%Y-%m-%d %H:%M}: {rows}{cut}",
        markup=False,
        soft_wrap=True,
    )
