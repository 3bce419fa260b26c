"""``guard access token create|list|revoke``: the tokens of the web console, the API and machines.

``guard`` on the command line is ``admin`` (it holds the volume), so it manages tokens; its
audit rows say ``cli:<unix user>``. A new token's secret is printed once, alone on the last line
of the output (for scripts: ``guard access token create ci --role viewer | tail -n1``); only
its sha256 is stored. docs/ACCESS.md.
"""

from __future__ import annotations

import getpass
from datetime import datetime

import typer
from rich.table import Table

from guard.access.roles import ROLE_NAMES, Role
from guard.access.tokens import create_token, list_tokens, revoke_token
from guard.cli.common import ConfigOption, database, fail, guarded, out, settings_from

app = typer.Typer(help="Roles and tokens: who may do what.", no_args_is_help=True)
token_app = typer.Typer(help="Tokens for the web console, the API and machines.")
app.add_typer(token_app, name="token")


def _by() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli:unknown"


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at is not None else "-"


@token_app.command("create")
def create(
    name: str = typer.Argument(..., help="The token's name: audit rows say token:NAME."),
    role: str = typer.Option(..., "--role", help=f"One of {', '.join(ROLE_NAMES)}."),
    config: str | None = ConfigOption,
) -> None:
    """Create a token and print it once, alone on the last line; only its hash is stored."""
    try:
        parsed = Role.parse(role)
    except ValueError as exc:
        fail(f"--role: {exc}", code=2)
    settings = settings_from(config, logging=False)
    with guarded():
        secret = create_token(database(settings), name, parsed, by=_by())
    out.print(
        f"created token {name} ({parsed.name}). It is shown once, below; Guard keeps only its "
        "hash. Send it as 'Authorization: Bearer TOKEN' or sign in with it at /login.",
        markup=False,
        soft_wrap=True,
    )
    typer.echo(secret)  # not through the redacting echo: this is the one time it is shown


@app.command("list")
def list_(config: str | None = ConfigOption) -> None:
    """Every token: name, role, created, last used, revoked (never a secret)."""
    settings = settings_from(config, logging=False)
    tokens = list_tokens(database(settings))
    if not tokens:
        out.print("no tokens yet: guard access token create NAME --role ROLE", markup=False)
        return
    table = Table("name", "role", "created", "last used", "revoked", box=None)
    for t in tokens:
        table.add_row(
            t.name, t.role.name, _when(t.created_at), _when(t.last_used_at), _when(t.revoked_at)
        )
    out.print(table)


@app.command("revoke")
def revoke(
    name: str = typer.Argument(..., help="The token's name."),
    config: str | None = ConfigOption,
) -> None:
    """Revoke a token: it stops working at once (its row stays, for the record)."""
    settings = settings_from(config, logging=False)
    if not revoke_token(database(settings), name, by=_by()):
        fail(f"no live token named {name!r} (see `guard access list`)")
    out.print(f"revoked token {name}", markup=False)
