"""``guard doctor``: what works here, before it is needed (``guard.app.capabilities``).

One line per capability (monitors, the sandbox, probes, each action family, the channels, the
model) with its state and what it means; ``--json`` prints ``{"capabilities": [...]}``, the list
``/readyz`` shows. The exit code is 1 when something configured cannot work here (a skill's
shell step with no sandbox, a docker monitor with no engine), 2 for an invalid config.
"""

from __future__ import annotations

import json

import typer
from rich.text import Text

from guard.cli.common import ConfigOption, config_failed, echo, out, settings_from
from guard.domain.exceptions import ConfigError

STYLE = {"ok": "green", "degraded": "yellow", "none": "red"}


def doctor(
    as_json: bool = typer.Option(False, "--json", help='Print {"capabilities": [...]}.'),
    config: str | None = ConfigOption,
) -> None:
    """Say what works here: monitors, sandbox, probes, actions, channels, model; exit 1 if
    something configured cannot work."""
    from guard.app.capabilities import assess
    from guard.playbooks import load_playbooks
    from guard.skills.library import load_library

    settings = settings_from(config, logging=False)
    try:
        books = load_playbooks(settings.playbooks_dir)
    except ConfigError as exc:
        config_failed(exc)
    skills, _quarantined = load_library(settings.skills_dir, settings.builtin_skills_dir)
    found = assess(settings, books, list(skills))
    if as_json:
        echo(json.dumps({"capabilities": [c.as_json() for c in found]}, indent=2))
    else:
        for c in found:
            mark = Text(f"{'!' if c.problem else ' '} ", style="red bold")
            out.print(mark + Text(c.line, style=STYLE[c.state]), soft_wrap=True)
    if any(c.problem for c in found):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
