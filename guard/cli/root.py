"""The ``guard`` Typer app: one module per verb group, each imported only when it runs.

Importing every verb module up front cost a second per command (SQLModel, pydantic-settings,
the Docker SDK, charts) before anything ran, so the root group knows its verbs from ``VERBS``,
a table of name -> (module, short help). ``guard --help`` lists them from the table alone; a
verb's module is imported when the verb is invoked, completed or asked for its own help
(``LazyGroup.resolve_command``). A verb module either has ``register(app)`` (top-level
commands) or an ``app`` (a group). ``tests/cli/test_lazy_cli.py`` checks that the table's help
is the modules' own, word for word.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

import typer
from typer.core import TyperCommand, TyperGroup

# name -> (module, the first paragraph of its help), in the order `guard --help` lists them:
# commands first, then groups, as Typer would order them registered one by one.
VERBS: dict[str, tuple[str, str]] = {
    "check-config": (
        "guard.cli.config_cmd",
        "Validate the config, every playbook and every skill; exit 2 naming each problem.",
    ),
    "doctor": (
        "guard.cli.doctor",
        "Say what works here: monitors, sandbox, probes, actions, channels, model; exit 1 if\n"
        "something configured cannot work.",
    ),
    "run": ("guard.cli.run", "Watch everything the playbooks name, and handle what goes wrong."),
    "approve": (
        "guard.cli.human",
        "Approve the first option shown on an incident (a model's proposal, else the best\n"
        "skill), or --skill NAME.",
    ),
    "deny": (
        "guard.cli.human",
        "Refuse the proposed remedy; the incident escalates and stays with humans.",
    ),
    "reply": (
        "guard.cli.human",
        "Send a fix: Guard runs it, verifies recovery, and learns it as a skill if it worked.",
    ),
    "ack": (
        "guard.cli.ack",
        "Acknowledge an incident: its escalation steps and reminders stop (operator role).",
    ),
    "resolve": (
        "guard.cli.ending",
        "Resolve an incident you know is over (operator role); it opens again if the fault\n"
        "fires again.",
    ),
    "mute": (
        "guard.cli.ending",
        "Mute an incident's target (operator role): recorded, but nobody is asked or paged\n"
        "until the mute ends.",
    ),
    "unmute": (
        "guard.cli.ending",
        "End the mutes of an incident's target (operator role); a muted incident is asked\n"
        "about again.",
    ),
    "silence": (
        "guard.cli.ending",
        "Silence incidents matching service, kind, target or labels for a while (operator\n"
        "role): recorded, nobody asked or paged.",
    ),
    "silences": (
        "guard.cli.ending",
        "The silences in force (--all: ended ones too), or --expire ID (operator role).",
    ),
    "diagnose": (
        "guard.cli.diagnose",
        "Investigate an incident with the configured model and print the transcript (proposes\n"
        "only; never runs a remedy).",
    ),
    "mcp": ("guard.cli.mcp", "Serve Guard's tools to a local agent over MCP on stdin/stdout."),
    "demo": (
        "guard.cli.demo",
        "Start a victim container, break it twice, and watch Guard learn the fix and heal it.",
    ),
    "playbooks": ("guard.cli.config_cmd", "Inspect playbooks."),
    "incidents": ("guard.cli.incidents", "List and inspect incidents."),
    "skills": ("guard.cli.skills", "List and inspect skills (built-in and learned)."),
    "memory": ("guard.cli.memory", "Guard's memory of past incidents."),
    "audit": ("guard.cli.audit", "The tamper-evident audit log."),
    "sandbox": (
        "guard.cli.sandbox",
        "Build sandbox images and run commands in the hardened sandbox.",
    ),
    "report": ("guard.cli.report", "Status reports."),
    "cluster": ("guard.cli.cluster", "Replicas and the leader lease."),
    "store": ("guard.cli.store", "The store: its size, and pruning old data."),
    "trajectories": ("guard.cli.trajectories", "Recorded incident handlings (trajectories)."),
    "access": ("guard.cli.access", "Roles and tokens: who may do what."),
    "host": ("guard.cli.host", "Hosts Guard acts on over SSH: pin, set up, check."),
    "mcp-servers": (
        "guard.cli.mcp_servers",
        "The MCP servers the model's investigation may use (llm.mcp_servers).",
    ),
}

MARKUP: Literal["rich"] = "rich"


class VerbStub(TyperCommand):
    """A verb not imported yet: its name and short help, enough for listings."""


def load_verb(name: str) -> Any:
    """The real click command for verb ``name``, importing its module."""
    module = importlib.import_module(VERBS[name][0])
    holder = typer.Typer(rich_markup_mode=MARKUP)
    if hasattr(module, "register"):
        module.register(holder)
    else:
        holder.add_typer(module.app, name=name)
    return typer.main.get_group(holder).commands[name]


class LazyGroup(TyperGroup):
    """The root group: verbs are stubs until one is resolved, then the real command."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, (_module, short) in VERBS.items():
            self.commands.setdefault(name, VerbStub(name=name, help=short))

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if isinstance(cmd, VerbStub) and name is not None:
            cmd = self.commands[name] = load_verb(name)
        return name, cmd, rest

    def load_all(self) -> None:
        """Import every verb (for tests that compare the listing with the real commands)."""
        for name, cmd in list(self.commands.items()):
            if isinstance(cmd, VerbStub):
                self.commands[name] = load_verb(name)


app = typer.Typer(
    name="guard",
    cls=LazyGroup,
    help="Guard watches your services, opens incidents, and heals them.\n\n"
    "Start with `guard check-config`, then `guard run`.",
    no_args_is_help=True,
    rich_markup_mode=MARKUP,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from guard import __version__

        typer.echo(f"guard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Guard: a self-healing DevOps guard agent."""
