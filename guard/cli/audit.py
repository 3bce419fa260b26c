"""``guard audit verify``: check the audit log's hash chain."""

from __future__ import annotations

import typer

from guard.cli.common import ConfigOption, database, err, out, settings_from
from guard.exceptions import AuditChainBroken
from guard.store import audit as chain

app = typer.Typer(help="The tamper-evident audit log.", no_args_is_help=True)


@app.command("verify")
def verify(config: str | None = ConfigOption) -> None:
    """Exit 0 if the hash chain holds; otherwise exit 1 naming the first broken entry."""
    settings = settings_from(config, logging=False)
    db = database(settings)
    with db.session() as session:
        try:
            n = chain.verify(session)
        except AuditChainBroken as exc:
            err.print(f"audit chain BROKEN at entry #{exc.seq}: {exc.reason}", markup=False)
            raise typer.Exit(1) from None
        seq, head = chain.head(session)
    out.print(f"audit chain ok: {n} entries, head #{seq} {head[:16]}")
