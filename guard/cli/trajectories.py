"""``guard trajectories export``: every incident's handling as JSONL training data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import typer
from sqlmodel import col, select

from guard.cli.common import ConfigOption, database, fail, out, settings_from
from guard.llm.trajectories import guard_record, sharegpt_record
from guard.store.models import Trajectory

app = typer.Typer(help="Recorded incident handlings (trajectories).", no_args_is_help=True)


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        fail(f"--since {text!r} is not a date (use e.g. 2026-12-01 or 2026-12-01T10:00)")
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@app.command("export")
def export(
    out_file: Path = typer.Option(..., "--out", metavar="FILE", help="JSONL file to write."),
    fmt: str = typer.Option("guard", "--format", help="guard or sharegpt."),
    since: str | None = typer.Option(
        None, "--since", metavar="DATE", help="Only handlings recorded on or after DATE."
    ),
    only_verified: bool = typer.Option(
        False, "--only-verified", help="Only handlings whose remedy verified."
    ),
    config: str | None = ConfigOption,
) -> None:
    """Write trajectories as JSONL. sharegpt writes successes to FILE and failures to
    FILE's name with ``.failed`` before the suffix."""
    if fmt not in ("guard", "sharegpt"):
        fail(f"--format {fmt!r}: use guard or sharegpt")
    settings = settings_from(config, logging=False)
    db = database(settings, read_only=True)
    start = _since(since)
    with db.session() as session:
        query = select(Trajectory).order_by(col(Trajectory.id))
        if start is not None:
            query = query.where(col(Trajectory.created_at) >= start)
        rows = [
            r
            for r in session.exec(query).all()
            if not only_verified or r.outcome.get("verified") is True
        ]
    if fmt == "guard":
        _write(out_file, [guard_record(r) for r in rows])
        out.print(f"wrote {len(rows)} trajectories to {out_file}", markup=False)
        return
    records = [sharegpt_record(r) for r in rows]
    good = [r for r in records if r["completed"]]
    bad = [r for r in records if not r["completed"]]
    failed_file = out_file.with_name(f"{out_file.stem}.failed{out_file.suffix or '.jsonl'}")
    _write(out_file, good)
    _write(failed_file, bad)
    out.print(
        f"wrote {len(good)} completed trajectories to {out_file} and {len(bad)} "
        f"others to {failed_file}",
        markup=False,
    )


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
