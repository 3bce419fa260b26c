"""``guard approve|deny|reply``: a human's answer to an incident.

The answer is queued in the database. When ``guard run`` is running, its agent picks it up
within a second and this command waits for the outcome; otherwise the command runs the agent
itself for this one answer. Either way the outcome is printed, and the exit code says whether
the remedy worked (0) or not (1).
"""

from __future__ import annotations

import asyncio
import getpass
import shlex
import time

import typer

from guard.app import Guard
from guard.cli.common import ConfigOption, config_failed, database, err, fail, out, settings_from
from guard.config import Settings
from guard.exceptions import ConfigError
from guard.incidents.commands import UnknownIncident, agent_alive, queue_command
from guard.playbooks import load_playbooks
from guard.store.db import Database
from guard.store.models import CommandStatus, HumanCommand
from guard.textsafe import printable

WaitOption = typer.Option(600.0, "--wait", help="Seconds to wait for the outcome.")


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli:unknown"


async def _process_here(settings: Settings, db: Database) -> None:
    try:
        books = load_playbooks(settings.playbooks_dir)
    except ConfigError as exc:
        config_failed(exc)
    guard = Guard(settings, books, db=db)
    agent = guard.agent
    agent.bind(asyncio.get_running_loop())
    await agent.poll_commands()
    await agent.drain()
    await agent.shutdown()
    await guard.close()


def answer(
    config: str | None,
    incident_id: int,
    verb: str,
    *,
    skill: str | None = None,
    fix: str | None = None,
    wait: float = 600.0,
) -> None:
    settings = settings_from(config)
    db = database(settings)
    try:
        cmd = queue_command(
            db, incident_id=incident_id, verb=verb, actor=_actor(), skill=skill, fix=fix
        )
    except UnknownIncident as exc:
        fail(str(exc))
    if agent_alive(db):
        err.print(f"queued for the running guard (answer #{cmd.id}); waiting for the outcome")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with db.session() as session:
                row = session.get(HumanCommand, cmd.id)
            if row is not None and row.status in (CommandStatus.done, CommandStatus.failed):
                break
            time.sleep(0.5)
    else:
        asyncio.run(_process_here(settings, db))
    with db.session() as session:
        row = session.get(HumanCommand, cmd.id)
    assert row is not None
    if row.status not in ("done", "failed"):
        out.print(
            f"answer #{row.id} is {row.status}; `guard incidents show {incident_id}` "
            "shows its progress"
        )
        return
    out.print(printable(row.outcome), markup=False, soft_wrap=True)
    if row.status == "failed":
        raise typer.Exit(1)


def approve(
    incident_id: int = typer.Argument(..., metavar="INCIDENT"),
    skill: str | None = typer.Option(
        None,
        "--skill",
        help="Skill to run, or `proposal` for the model's proposed fix "
        "(default: the first option shown; the proposal when there is one).",
    ),
    wait: float = WaitOption,
    config: str | None = ConfigOption,
) -> None:
    """Approve the first option shown on an incident (a model's proposal, else the best
    skill), or --skill NAME."""
    answer(config, incident_id, "approve", skill=skill, wait=wait)


def deny(
    incident_id: int = typer.Argument(..., metavar="INCIDENT"),
    wait: float = WaitOption,
    config: str | None = ConfigOption,
) -> None:
    """Refuse the proposed remedy; the incident escalates and stays with humans."""
    answer(config, incident_id, "deny", wait=wait)


def reply(
    incident_id: int = typer.Argument(..., metavar="INCIDENT"),
    fix: list[str] = typer.Argument(
        ...,
        metavar="-- FIX...",
        help="A shell command for the sandbox, or an action such as `docker.restart api`.",
    ),
    wait: float = WaitOption,
    config: str | None = ConfigOption,
) -> None:
    """Send a fix: Guard runs it, verifies recovery, and learns it as a skill if it worked."""
    # One word is a command line as typed in quotes; several are argv, kept word for word.
    answer(
        config, incident_id, "reply", fix=fix[0] if len(fix) == 1 else shlex.join(fix), wait=wait
    )


def register(app: typer.Typer) -> None:
    app.command("approve")(approve)
    app.command("deny")(deny)
    app.command("reply")(reply)
