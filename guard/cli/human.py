"""``guard approve|deny|reply``: a human's answer to an incident.

The answer is queued in the database, through the authorisation gate Guard runs with (the
CLI's actor is ``cli:<unix user>``; a refusal exits 1 and is audited). When ``guard run`` is
running, its agent picks it up within a second and this command waits for the outcome;
otherwise the command runs the agent itself for this one answer. Either way the outcome is
printed, and the exit code says whether the remedy worked (0) or not (1).
"""

from __future__ import annotations

import asyncio
import getpass
import shlex
import time

import typer
from sqlmodel import Session, col, select

from guard.cli.common import (
    ConfigOption,
    database,
    err,
    fail,
    out,
    settings_from,
    standalone_agent,
)
from guard.config import Settings
from guard.incidents.commands import UnknownIncident, agent_alive, queue_command
from guard.incidents.gate import Actor, NotAuthorised
from guard.notify.running_gate import gate_from_settings
from guard.store.db import Database
from guard.store.models import Approval, CommandStatus, HumanCommand, Incident
from guard.store.state import get_state
from guard.util.commandtext import approval_key, digest, oddities, short
from guard.util.textsafe import printable

WaitOption = typer.Option(600.0, "--wait", help="Seconds to wait for the outcome.")


def cli_actor() -> Actor:
    try:
        return Actor("cli", getpass.getuser())
    except Exception:
        return Actor("cli", "unknown")


async def _process_here(settings: Settings, db: Database) -> None:
    async with standalone_agent(settings, db) as agent:
        agent.bind(asyncio.get_running_loop())
        await agent.poll_commands()
        await agent.drain()


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
            db,
            incident_id=incident_id,
            verb=verb,
            actor=cli_actor(),
            gate=gate_from_settings(settings, db),
            skill=skill,
            fix=fix,
        )
    except NotAuthorised as exc:
        fail(f"refused: {exc}")
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
    expect: str | None = typer.Option(
        None,
        "--digest",
        help="The proposal's digest as you saw it (`guard incidents show`, the console's "
        "question): nothing is queued if the proposal is no longer that text.",
    ),
    wait: float = WaitOption,
    config: str | None = ConfigOption,
) -> None:
    """Approve the first option shown on an incident (a model's proposal, else the best
    skill), or --skill NAME.

    A proposal's command is printed whole, and the approval is bound to its digest: if the
    proposal changes before it runs, nothing runs."""
    bound = _bind_proposal(config, incident_id, skill, expect)
    answer(config, incident_id, "approve", skill=skill, fix=bound, wait=wait)


def _bind_proposal(
    config: str | None, incident_id: int, skill: str | None, expect: str | None
) -> str | None:
    """The digest of the proposal this approval runs, once the command is printed (None: the
    approval runs a skill). Without ``expect``, the text the human was asked about (the live
    question's proposal approval) is what is approved. Exits if that, or ``expect``, is
    another text than the proposal's now."""
    with database(settings_from(config)).session() as session:
        inc = session.get(Incident, incident_id)
        asked = _asked_digest(session, incident_id)
    if inc is None:
        fail(f"no incident {incident_id} (see `guard incidents list`)")
    shown = list(inc.details.get("options") or [])
    proposal = inc.details.get("proposal")
    if (skill or (shown[0] if shown else None)) != "proposal" or not isinstance(proposal, dict):
        if expect:
            fail(f"--digest binds a proposal, and incident {incident_id}'s option is a skill")
        return None
    fix = str(proposal.get("fix") or "")
    now = digest(fix)
    if expect and (len(expect) < 12 or not now.startswith(expect.lower())):
        fail(
            f"nothing queued: incident {incident_id}'s proposal is no longer the text you saw "
            f"(you gave {expect[:12]}, it is now {short(now)}); see "
            f"`guard incidents show {incident_id}`"
        )
    if not expect and asked and asked != now:
        fail(
            f"nothing queued: incident {incident_id}'s proposal changed after the question "
            f"showed it (asked {short(asked)}, now {short(now)}); read it with `guard incidents "
            f"show {incident_id}`, then approve it with --digest"
        )
    odd = oddities(fix)
    err.print(
        f"approving the proposal (sha256 {short(now)}), which runs exactly:\n"
        + (repr(fix) + f"\n(refused: {'; '.join(odd)})" if odd else fix),
        markup=False,
        soft_wrap=True,
    )
    return now


def _asked_digest(session: Session, incident_id: int) -> str:
    """The digest of the proposal the incident's live question showed ("" if none is live)."""
    live = session.exec(
        select(Approval)
        .where(
            Approval.incident_id == incident_id,
            Approval.skill == "proposal",
            col(Approval.used_at).is_(None),
        )
        .order_by(col(Approval.created_at).desc())
    ).first()
    return str(get_state(session, approval_key(live.id)).get("digest") or "") if live else ""


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
        help="A shell command for the sandbox, an action such as `docker.restart api`, or a "
        "probe such as `probe.http URL` (evidence only: it runs, and nothing is learned).",
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
