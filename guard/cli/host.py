"""``guard host``: hosts Guard acts on over SSH (docs/HOSTS.md).

``add NAME --scan`` prints the key a host presents, for a person to check and pin; ``setup
NAME`` prints the script that installs the host's side (a user, guard-exec, the allowlist,
sudoers, the authorized_keys line); ``check NAME`` asks the host's guard-exec what it allows
and compares it with what the config and the skills would send. None of them changes a host.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

import typer

from guard.cli.common import ConfigOption, echo, err, fail, guarded, settings_from

_FILES = {"ssh-ed25519": "ed25519", "ecdsa-sha2-nistp256": "ecdsa", "ssh-rsa": "rsa"}
app = typer.Typer(help="Hosts Guard acts on over SSH: pin, set up, check.", no_args_is_help=True)


def _skill_steps(settings: Any) -> list[tuple[str, str, dict[str, Any]]]:
    from guard.skills.library import load_library

    skills, _ = load_library(settings.skills_dir, settings.builtin_skills_dir)
    return [
        (skill.name, step.action, step.args)
        for skill in skills
        for step in (*skill.spec.diagnostics, *skill.spec.steps)
        if step.action is not None and step.action.startswith("host.")
    ]


def _wanted(settings: Any, name: str) -> tuple[list[list[str]], list[tuple[str, list[str]]]]:
    """The allowlist Guard would install on ``name``, and what each skill needs of it."""
    from guard.actions.host import needed
    from guard.hosts import allowlist as commands
    from guard.hosts.ssh import host_settings

    needs = needed(settings, name, _skill_steps(settings))
    return commands.allowlist(host_settings(settings, name), [a for _, a in needs]), needs


@app.command()
def add(
    name: str = typer.Argument(..., help="The host's name in hosts:."),
    scan: bool = typer.Option(False, "--scan", help="Ask the host for its key (review it!)."),
    address: str | None = typer.Option(None, "--address", help="Default: hosts.NAME.address."),
    port: int | None = typer.Option(None, "--port", help="Default: hosts.NAME.port, else 22."),
    config: str | None = ConfigOption,
) -> None:
    """Print the hosts: entry for NAME; with --scan, the key the host presents, to pin."""
    from guard.hosts.ssh import asyncssh
    from guard.hosts.ssh import scan as scan_keys

    settings = settings_from(config, logging=False)
    known = settings.hosts.get(name)
    address = address or (known.address if known else None)
    if not address:
        fail(f"host {name!r} is not configured: give --address")
    port = port or (known.port if known else 22)
    keys: list[str] = []
    if scan:
        keys = asyncio.run(scan_keys(address, port))
        if not keys:
            fail(f"{address}:{port} presented no SSH host key (is sshd listening there?)")
    typer.echo(f"hosts:\n  {name}:\n    address: {address}\n    port: {port}")
    typer.echo(f"    host_key: {keys[0] if keys else '<paste the key after checking it>'}")
    typer.echo(f"    key: {name}_ssh  # the secret: GUARD_SECRET_{name.upper()}_SSH")
    for key in keys:
        sha = asyncssh.import_public_key(key).get_fingerprint("sha256")
        err.print(
            f"{address}:{port} presents {key.split()[0]} {sha}; compare on the host with "
            f"`ssh-keygen -lf /etc/ssh/ssh_host_{_FILES[key.split()[0]]}_key.pub` before pinning",
            markup=False,
            soft_wrap=True,
        )


@app.command()
def setup(
    name: str = typer.Argument(..., help="The host's name in hosts:."),
    config: str | None = ConfigOption,
) -> None:
    """Print the script that sets up NAME for Guard (review it, then run it as root there)."""
    from guard.hosts.setup import script
    from guard.hosts.ssh import host_settings, private_key

    settings = settings_from(config, logging=False)
    with guarded():
        host = host_settings(settings, name)
        public = private_key(settings, name).export_public_key("openssh").decode()
        lines, _ = _wanted(settings, name)
        opens = [f"{h.address}:{h.port}" for h in settings.hosts.values() if h.jump == name]
        typer.echo(script(host, name, " ".join(public.split()[:2]), lines, opens), nl=False)


@app.command()
def check(
    name: str = typer.Argument(..., help="The host's name in hosts:."),
    config: str | None = ConfigOption,
) -> None:
    """Say what NAME allows (its guard-exec's allowlist) and what Guard would need of it."""
    from guard.hosts.ssh import run

    settings = settings_from(config, logging=False)
    with guarded():
        wanted, needs = _wanted(settings, name)
        ran = asyncio.run(run(settings, name, ["@allowlist"]))
    if not ran.ok:
        fail(f"host {name} did not give its allowlist (exit {ran.exit_status}): {ran.output}")
    allowed = [shlex.join(shlex.split(line)) for line in ran.output.splitlines() if line.strip()]
    echo(f"host {name} allows {len(allowed)} command(s):")
    for line in allowed:
        echo(f"  {line}")
    missing = [shlex.join(a) for a in wanted if shlex.join(a) not in allowed]
    for skill, argv in needs:
        mark = "missing" if shlex.join(argv) in missing else "allowed"
        echo(f"skill {skill} needs: {shlex.join(argv)} ({mark})")
    if missing:
        echo(f"not allowed by {name} but in its config or skills ({len(missing)}):")
        for line in missing:
            echo(f"  {line}")
        echo(f"install the output of `guard host setup {name}` on the host to allow them")
        raise typer.Exit(1)
    echo(f"everything Guard's config and skills need of {name} is allowed")
