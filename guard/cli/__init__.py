"""The ``guard`` command line: one module per verb group, assembled here."""

from __future__ import annotations

import typer

from guard import __version__
from guard.cli import (
    audit,
    cluster,
    config_cmd,
    demo,
    diagnose,
    human,
    incidents,
    memory,
    report,
    run,
    sandbox,
    skills,
    store,
    trajectories,
)

app = typer.Typer(
    name="guard",
    help="Guard watches your services, opens incidents, and heals them.\n\n"
    "Start with `guard check-config`, then `guard run`.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"guard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Guard: a self-healing DevOps guard agent."""


config_cmd.register(app)
run.register(app)
human.register(app)
diagnose.register(app)
demo.register(app)
app.add_typer(incidents.app, name="incidents")
app.add_typer(skills.app, name="skills")
app.add_typer(memory.app, name="memory")
app.add_typer(audit.app, name="audit")
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(report.app, name="report")
app.add_typer(cluster.app, name="cluster")
app.add_typer(store.app, name="store")
app.add_typer(trajectories.app, name="trajectories")


def main() -> None:
    """Console-script entry point."""
    app()
