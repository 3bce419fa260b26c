"""``guard skills list|show|history|promote``: the skills Guard knows, their revisions, and
an admin's promotion of one (with no git remote)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from guard.cli.common import ConfigOption, database, err, fail, guarded, out, settings_from
from guard.config import Settings
from guard.skills.library import Skill, load_library
from guard.util.textsafe import printable

app = typer.Typer(help="List and inspect skills (built-in and learned).", no_args_is_help=True)


def review_of(skill: Skill) -> str:
    """``pending`` (under review: never run unasked), ``merged`` or ``direct``."""
    if skill.pending:
        return "pending"
    review = skill.review
    return (
        "merged"
        if review is not None and (review.status == "merged" or review.revision)
        else "direct"
    )


def records(settings: Settings, skills: list[Skill]) -> dict[str, dict[str, Any]]:
    """Each skill's outcomes and standing on the ladder, read from the store."""
    from guard.skills.ladder import describe
    from guard.skills.localpromotion import proposal_of

    db = database(settings, read_only=True)
    try:
        with db.session() as session:
            found = describe(session, skills, settings.skills)
            proposals = {name: proposal_of(session, name) for name in found}
    finally:
        db.dispose()
    return {
        name: {
            **standing.as_dict(),
            "outcomes": out.as_dict(),
            "summary": out.summary(),
            "proposal": proposals[name] if standing.proposed else None,
        }
        for name, (out, standing) in found.items()
    }


def skill_dict(skill: Skill, record: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON of ``skills list|show``: ``trust`` is the effective one (a demotion's
    ``approval``); ``trust_file`` is what skill.yaml says."""
    spec = skill.spec
    review = skill.review
    record = record or {}
    return {
        "name": skill.name,
        "description": skill.description,
        "trust": record.get("trust", spec.trust),
        "trust_file": spec.trust,
        "origin": spec.origin,
        "path": str(skill.path),
        "triggers": [t.model_dump(exclude_none=True) for t in spec.triggers],
        "steps": [s.describe() for s in spec.steps],
        "limits": spec.limits.model_dump(mode="json"),
        "learned_from": spec.learned_from,
        "revision": spec.revision,
        "review": review_of(skill),
        "branch": review.branch if review else None,
        "url": review.url if review else None,
        "outcomes": record.get("outcomes"),
        "demoted": record.get("demoted"),
        "promotion": record.get("promotion"),
        "proposal": record.get("proposal"),
        "stale": record.get("stale", False),
    }


@app.command("list")
def list_skills(
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array."),
    config: str | None = ConfigOption,
) -> None:
    """List skills with their trust and triggers."""
    settings = settings_from(config, logging=False)
    skills, quarantined = load_library(settings.skills_dir, settings.builtin_skills_dir)
    for name in quarantined:
        err.print(
            f"skill {name} is quarantined (does not load; `guard check-config` says why)",
            markup=False,
        )
    with guarded():
        found = records(settings, skills)
    if as_json:
        typer.echo(json.dumps([skill_dict(s, found[s.name]) for s in skills], indent=2))
        return
    if not skills:
        out.print(f"no skills in {settings.skills_dir}")
        return
    table = Table("name", "trust", "origin", "review", "runs", "triggers", box=None)
    for s in skills:
        triggers = "; ".join(
            ", ".join(
                f"{k}={v}" for k, v in t.model_dump(exclude_none=True).items() if k != "message"
            )
            for t in s.spec.triggers
        )
        review = review_of(s) + (f" {s.review.link}" if s.pending and s.review else "")
        rec = found[s.name]
        trust = rec["trust"] + (" (demoted)" if rec["demoted"] else "")
        o = rec["outcomes"]
        runs = f"{o['verified']}/{o['runs']} verified, {o['reversals']} reversed"
        runs += ", stale" if rec["stale"] else ""
        runs += ", promotion proposed" if rec["promotion"] else ""
        table.add_row(
            s.name,
            trust,
            s.spec.origin,
            Text(printable(review)),
            runs,
            Text(printable(triggers)),
        )
    out.print(table)


@app.command("show")
def show(
    name: str = typer.Argument(..., metavar="NAME"),
    as_json: bool = typer.Option(False, "--json", help="Print it as a JSON object."),
    config: str | None = ConfigOption,
) -> None:
    """Show a skill: its SKILL.md, skill.yaml, outcomes and git history."""
    settings = settings_from(config, logging=False)
    skill = find_skill(settings, name)
    with guarded():
        rec = records(settings, [skill])[skill.name]
    if as_json:
        typer.echo(json.dumps(skill_dict(skill, rec), indent=2))
        return
    out.print(printable((skill.path / "SKILL.md").read_text()), markup=False, highlight=False)
    out.print("--- skill.yaml", markup=False)
    out.print(printable((skill.path / "skill.yaml").read_text()), markup=False, highlight=False)
    out.print("--- outcomes", markup=False)
    lines = [f"trust: {rec['trust']}; {rec['summary']}"]
    lines += [f"{k}: {printable(rec[k])}" for k in ("demoted", "promotion") if rec[k]]
    for line in lines:
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    if rec["stale"]:
        out.print(f"stale: unused for {settings.skills.stale_after / 86400:g} days", markup=False)
    log = subprocess.run(
        ["git", "log", "--format=%h %ad %s", "--date=short", "--", "."],
        cwd=skill.path,
        capture_output=True,
        text=True,
        check=False,
    )
    if log.returncode == 0 and log.stdout.strip():
        out.print("--- git log", markup=False)
        out.print(log.stdout.strip(), markup=False)


def find_skill(settings: Settings, name: str) -> Skill:
    """The skill named ``name``, or exit naming ``guard skills list``."""
    with guarded():
        skills = load_library(settings.skills_dir, settings.builtin_skills_dir)[0]
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        fail(f"no skill named {name!r} (see `guard skills list`)")
    return skill


@app.command("history")
def history(
    name: str = typer.Argument(..., metavar="NAME"),
    as_json: bool = typer.Option(False, "--json", help="Print it as a JSON object."),
    with_diff: bool = typer.Option(False, "--diff", help="Show the steps' diff of each revision."),
    config: str | None = ConfigOption,
) -> None:
    """Show a skill's revisions: when, what made each one, its commit, its outcomes."""
    from guard.skills.history import revisions, with_outcomes

    settings = settings_from(config, logging=False)
    skill = find_skill(settings, name)
    found = revisions(skill)
    db = database(settings, read_only=True)
    try:
        with db.session() as session:
            with_outcomes(session, skill, found)
    finally:
        db.dispose()
    if as_json:
        entries = [r.as_dict(with_diff) for r in found]
        doc = {"name": skill.name, "revision": skill.spec.revision, "revisions": entries}
        typer.echo(json.dumps(doc, indent=2))
        return
    out.print(f"skill {skill.name}: {len(found)} revision(s)", markup=False, highlight=False)
    for rev in found:
        when = f"{rev.at:%Y-%m-%d %H:%M} UTC" if rev.at else "-"
        who = f" (approved by {rev.by})" if rev.by else ""
        commit = rev.commit[:10] if rev.commit else "not in git"
        lines = [f"revision {rev.revision}  {when}  {rev.made_by}{who}  commit {commit}"]
        lines += [f"  {c['commit'][:10]} {c['made_by']}: {c['subject']}" for c in rev.commits[1:]]
        lines.append("  steps: " + "; ".join(s.describe() for s in rev.spec.steps))
        lines.append(f"  outcomes: {rev.outcome.summary() if rev.outcome else '-'}")
        if with_diff and rev.diff:
            lines += ["  " + line for line in rev.diff.splitlines()]
        for line in lines:
            out.print(printable(line), markup=False, highlight=False, soft_wrap=True)


@app.command("promote")
def promote(
    name: str = typer.Argument(..., metavar="NAME"),
    config: str | None = ConfigOption,
) -> None:
    """Trust a skill (admin): answer its proposed promotion, or promote it unproposed, by
    committing trust: trusted to the skills repository. With skills.git_remote, merge its
    guard/promote/NAME branch there instead."""
    from guard.cli.human import cli_actor
    from guard.incidents.gate import Refused, authorise_in
    from guard.notify.running_gate import gate_from_settings
    from guard.skills.localpromotion import VERB, promote_now

    settings = settings_from(config, logging=False)
    if settings.skills.git_remote:
        fail(
            f"skills.git_remote is set: merge guard/promote/{name} on "
            f"{settings.skills.git_remote} (Guard takes it at the next `guard skills sync`)"
        )
    skill = find_skill(settings, name)
    actor = cli_actor()
    with guarded():
        db = database(settings)
        with db.session() as session:
            decision = authorise_in(
                session,
                gate_from_settings(settings, db),
                actor,
                VERB,
                None,
                None,
                subject=f"skill:{skill.name}",
            )
        if isinstance(decision, Refused):
            fail(f"refused: {decision.reason}")
        notes = promote_now(db, settings, skill.name, actor.name)
    for note in notes or [f"skill {skill.name} already says trust: trusted"]:
        out.print(note, markup=False, highlight=False, soft_wrap=True)


@app.command("sync")
def sync(config: str | None = ConfigOption) -> None:
    """Fetch skills.git_branch from skills.git_remote, fast-forward, push what waits, and
    settle skills under review (merged: trusted; reverted or rejected: gone)."""
    settings = settings_from(config)
    if not settings.skills.git_remote:
        fail("skills.git_remote is not set: there is nothing to sync with")
    from guard.skills.remote import sync_now

    with guarded():
        db = database(settings)
    result, _ = sync_now(settings, log=False, db=db)
    for note in result.notes:
        out.print(note, markup=False, highlight=False, soft_wrap=True)
    for error in result.errors:
        err.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
    if result.errors:
        raise typer.Exit(1)
    if not result.notes:
        out.print(
            f"up to date with {settings.skills.git_remote} ({settings.skills.git_branch})",
            markup=False,
            highlight=False,
        )
