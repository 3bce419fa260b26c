"""``guard run``: the appliance's main loop (or one pass with ``--once``)."""

from __future__ import annotations

import asyncio

import typer
from loguru import logger

from guard.app import Guard
from guard.app.process import limit_malloc_arenas
from guard.cli.common import ConfigOption, config_failed, database, out, settings_from
from guard.domain.exceptions import ConfigError
from guard.playbooks import load_playbooks

DEPOSED = 3  # exit status of a leader that lost its lease


def run(
    config: str | None = ConfigOption,
    once: bool = typer.Option(
        False, "--once", help="Run each monitor one time, process what it found, and exit."
    ),
    heal: bool = typer.Option(
        False, "--heal", help="With --once: also let the agent handle what was found."
    ),
    no_agent: bool = typer.Option(
        False, "--no-agent", help="Watch and open incidents, but never remediate."
    ),
) -> None:
    """Watch everything the playbooks name, and handle what goes wrong."""
    limit_malloc_arenas()  # before the first thread
    settings = settings_from(config)
    try:
        books = load_playbooks(settings.playbooks_dir)
    except ConfigError as exc:
        config_failed(exc)
    guard = Guard(settings, books, db=database(settings), heal=not no_agent)
    if once:
        events = asyncio.run(guard.run_once(heal=heal and not no_agent))
        opened = sum(1 for e in events if e.type == "opened")
        out.print(
            f"checked {len(guard.monitors)} monitor(s): {opened} incident(s) opened, "
            f"{len(events) - opened} other change(s)"
        )
        return
    logger.info("data in {}, database {}", settings.data_dir, guard.db.engine.url)
    asyncio.run(guard.run())
    if guard.leadership.deposed:  # the supervisor starts it again, as a standby
        raise typer.Exit(DEPOSED)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
