"""``guard cluster status``: the replicas sharing this database, and which one leads."""

from __future__ import annotations

import json

import typer

from guard.cli.common import ConfigOption, database, echo, out, settings_from
from guard.cluster.status import replicas

app = typer.Typer(help="Replicas and the leader lease.", no_args_is_help=True)


@app.command("status")
def status(
    as_json: bool = typer.Option(False, "--json", help='Print {"replicas": [...]}.'),
    config: str | None = ConfigOption,
) -> None:
    """Each running replica: id, pid, host, whether it leads, when it was last seen, and until
    when the leader's lease runs."""
    settings = settings_from(config, logging=False)
    rows = replicas(database(settings, read_only=True))
    if as_json:
        echo(json.dumps({"replicas": rows}, indent=2))
        return
    if not rows:
        out.print("no replica is running")
        return
    for r in rows:
        role = f"leader until {r['lease_until'] or '-'}" if r["leader"] else "standby"
        out.print(
            f"{r['id']}  pid {r['pid']} on {r['host']}  {role}  last seen {r['last_seen']}",
            markup=False,
            soft_wrap=True,
        )
