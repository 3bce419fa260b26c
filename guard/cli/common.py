"""Shared CLI plumbing: the ``--config`` option, loading settings, and turning errors into exits.

Every verb module imports this one, and ``guard incidents list`` must start in well under a
second, so the settings, the store and logging (pydantic-settings, SQLAlchemy, loguru) are
imported by the functions that use them, not here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.text import Text

from guard.cli.console import RedactingConsole as RedactingConsole
from guard.cli.console import err as err
from guard.cli.console import out as out
from guard.domain.exceptions import ConfigError, GuardError
from guard.redact import configure as configure_redaction
from guard.redact import redact
from guard.util.textsafe import printable

if TYPE_CHECKING:
    from guard.agent.loop import Agent
    from guard.config import Settings
    from guard.store.db import Database


def echo(text: str, *, nl: bool = True) -> None:
    """``typer.echo`` for text that may hold stored data: redacted on the way out."""
    typer.echo(redact(text), nl=nl)


ConfigOption: Any = typer.Option(
    None,
    "--config",
    "-c",
    envvar="GUARD_CONFIG",
    metavar="FILE",
    help="guard.yaml to read (default: $GUARD_CONFIG, else ./guard.yaml if present).",
)

EXIT_CONFIG = 2


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(Text("error:", style="red") + Text(f" {printable(message)}"), soft_wrap=True)
    raise typer.Exit(code)


def config_failed(exc: ConfigError) -> NoReturn:
    for problem in exc.problems:
        err.print(printable(problem), markup=False, soft_wrap=True)
    err.print(f"[red]{len(exc.problems)} problem(s) found[/red]", markup=True)
    raise typer.Exit(EXIT_CONFIG)


def settings_from(config: str | None, *, logging: bool = True) -> Settings:
    """Load settings or exit 2 naming every problem; also sets up logging."""
    from guard.config import load_settings
    from guard.store import audit
    from guard.telemetry.logsetup import setup_logging

    try:
        settings = load_settings(config)
    except ConfigError as exc:
        config_failed(exc)
    configure_redaction(settings)
    audit.configure(settings)
    if logging:
        setup_logging(settings.log_level, settings.log_format, settings.secret_values())
    return settings


@contextmanager
def guarded() -> Iterator[None]:
    """Turn Guard's own errors into a clear message and a non-zero exit."""
    try:
        yield
    except ConfigError as exc:
        config_failed(exc)
    except GuardError as exc:
        fail(str(exc))


def database(settings: Settings, *, read_only: bool = False) -> Database:
    """The store; ``read_only`` commands skip ``create_all`` when the schema is current."""
    from guard.store.db import open_database

    with guarded():
        return open_database(settings.database_url, read_only=read_only)


@asynccontextmanager
async def standalone_agent(settings: Settings, db: Database) -> AsyncIterator[Agent]:
    """The agent of a Guard built from the playbooks, outside ``guard run`` (``guard
    diagnose``, ``guard mcp``); shut down with its Guard on the way out."""
    from guard.app import Guard
    from guard.playbooks import load_playbooks

    try:
        books = load_playbooks(settings.playbooks_dir)
    except ConfigError as exc:
        config_failed(exc)
    guard = Guard(settings, books, db=db)
    agent = guard.agent
    try:
        yield agent
    finally:
        await agent.shutdown()
        await guard.close()
