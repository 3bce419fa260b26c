"""``guard check-config`` and ``guard playbooks schema``."""

from __future__ import annotations

from pathlib import Path

import typer

from guard.cli.common import ConfigOption, config_failed, out, settings_from
from guard.domain.exceptions import ConfigError
from guard.playbooks import load_playbooks, playbook_json_schema
from guard.skills.library import load_library

playbooks_app = typer.Typer(help="Inspect playbooks.", no_args_is_help=True)


def check_config(config: str | None = ConfigOption) -> None:
    """Validate the config, every playbook and every skill; exit 2 naming each problem."""
    settings = settings_from(config, logging=False)
    problems: list[str] = []
    books = []
    try:
        books = load_playbooks(settings.playbooks_dir)
    except ConfigError as exc:
        problems += exc.problems
    skills, quarantined = load_library(settings.skills_dir, settings.builtin_skills_dir)
    for name, found in quarantined.items():
        problems += [
            f"{p} (skill {name} is quarantined: `guard run` skips it until fixed)" for p in found
        ]
    if settings.skills.git_remote:
        from guard.domain.exceptions import SkillsRemoteError
        from guard.skills.remote import SkillsRemote

        try:
            SkillsRemote(settings).check_local()
        except SkillsRemoteError as exc:
            problems.append(f"skills.git_remote: {exc}")
    from guard.monitors.kinds import monitor_kind

    for name in dict.fromkeys(m.type for b in books for m in b.monitors):
        kind = monitor_kind(name)
        if kind is not None and kind.config_problem and (problem := kind.config_problem(settings)):
            problems.append(problem)
    if problems:
        config_failed(ConfigError(problems))
    from guard.actions.probes.checks import probe_warnings
    from guard.config.intake import replay_warnings
    from guard.railway.budget import railway_budget_warnings
    from guard.redact import allow_warnings

    probing = [
        (f"playbook {b.name} diagnostics[{i}]", d.action, d.args)
        for b in books
        for i, d in enumerate(b.diagnostics)
        if d.action is not None
    ] + [
        (f"skill {s.name} diagnostics[{i}]", d.action, d.args)
        for s in skills
        for i, d in enumerate(s.spec.diagnostics)
        if d.action is not None
    ]
    warnings = railway_budget_warnings(settings, books) + allow_warnings(settings.redact.allow)
    warnings += probe_warnings(settings.probes, probing)
    for warning in warnings + replay_warnings(settings.intake):
        typer.echo(f"warning: {warning}", err=True)
    if settings.agent.enabled:  # a shell step no sandbox can run here: said now, not at 3 a.m.
        from guard.app.capabilities import unrunnable_here

        for warning in unrunnable_here(settings, books, skills):
            typer.echo(f"warning: {warning}", err=True)
    monitors = sum(len(b.monitors) for b in books)
    out.print(
        f"config ok: {len(books)} playbook(s), {monitors} monitor(s) "
        f"in {settings.playbooks_dir}; {len(skills)} skill(s) in {settings.skills_dir}"
    )


@playbooks_app.command("schema")
def schema(
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to FILE."),
) -> None:
    """Print the JSON Schema of playbook files (for editor validation)."""
    text = playbook_json_schema()
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text)
        out.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    app.command("check-config")(check_config)
    app.add_typer(playbooks_app, name="playbooks")
