"""``guard skills list|show``: the skills Guard knows."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from guard.cli.common import ConfigOption, err, fail, guarded, out, settings_from
from guard.skills.library import Skill, load_library
from guard.util.textsafe import printable

app = typer.Typer(help="List and inspect skills (built-in and learned).", no_args_is_help=True)


def review_of(skill: Skill) -> str:
    """``pending`` (under review: never run unasked), ``merged`` or ``direct``."""
    if skill.pending:
        return "pending"
    return "merged" if skill.review is not None and skill.review.status == "merged" else "direct"


def skill_dict(skill: Skill) -> dict[str, Any]:
    spec = skill.spec
    review = skill.review
    return {
        "name": skill.name,
        "description": skill.description,
        "trust": spec.trust,
        "origin": spec.origin,
        "path": str(skill.path),
        "triggers": [t.model_dump(exclude_none=True) for t in spec.triggers],
        "steps": [s.describe() for s in spec.steps],
        "limits": spec.limits.model_dump(mode="json"),
        "learned_from": spec.learned_from,
        "review": review_of(skill),
        "branch": review.branch if review else None,
        "url": review.url if review else None,
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
    if as_json:
        typer.echo(json.dumps([skill_dict(s) for s in skills], indent=2))
        return
    if not skills:
        out.print(f"no skills in {settings.skills_dir}")
        return
    table = Table("name", "trust", "origin", "review", "triggers", box=None)
    for s in skills:
        triggers = "; ".join(
            ", ".join(
                f"{k}={v}" for k, v in t.model_dump(exclude_none=True).items() if k != "message"
            )
            for t in s.spec.triggers
        )
        review = review_of(s) + (f" {s.review.link}" if s.pending and s.review else "")
        table.add_row(
            s.name, s.spec.trust, s.spec.origin, Text(printable(review)), Text(printable(triggers))
        )
    out.print(table)


@app.command("show")
def show(
    name: str = typer.Argument(..., metavar="NAME"), config: str | None = ConfigOption
) -> None:
    """Show a skill: its SKILL.md, skill.yaml and git history."""
    settings = settings_from(config, logging=False)
    with guarded():
        skill = next(
            (
                s
                for s in load_library(settings.skills_dir, settings.builtin_skills_dir)[0]
                if s.name == name
            ),
            None,
        )
    if skill is None:
        fail(f"no skill named {name!r} (see `guard skills list`)")
    out.print(printable((skill.path / "SKILL.md").read_text()), markup=False, highlight=False)
    out.print("--- skill.yaml", markup=False)
    out.print(printable((skill.path / "skill.yaml").read_text()), markup=False, highlight=False)
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


@app.command("sync")
def sync(config: str | None = ConfigOption) -> None:
    """Fetch skills.git_branch from skills.git_remote, fast-forward, push what waits, and
    settle skills under review (merged: trusted; reverted or rejected: gone)."""
    settings = settings_from(config)
    if not settings.skills.git_remote:
        fail("skills.git_remote is not set: there is nothing to sync with")
    from guard.skills.remote import sync_now

    result, _ = sync_now(settings, log=False)
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
