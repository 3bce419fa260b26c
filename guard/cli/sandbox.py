"""``guard sandbox``: build the toolbox image and run commands in the hardened sandbox.

``build`` shows one spinner line per stage with its elapsed time; ``run`` starts a fresh sandbox
(reaping containers left by dead Guard processes first), runs one command, prints its output,
and exits with the command's exit code (124 on timeout). Errors print one clear line: exit 2 for
configuration problems, 1 for anything else Guard detected.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer
from loguru import logger
from pydantic import ValidationError
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from guard.config import Settings, load_settings
from guard.domain.exceptions import ConfigError, GuardError
from guard.redact import Redactor
from guard.util.docker_client import Timeouts
from guard.util.validation import format_validation_error

app = typer.Typer(
    help="Build sandbox images and run commands in the hardened sandbox.", no_args_is_help=True
)
err = Console(stderr=True, soft_wrap=True)

ConfigOpt = typer.Option(None, "--config", "-c", help="Guard YAML config file.")
ImageOpt = typer.Option(None, "--image", help="Image name (default: sandbox.image).")


def _fail(message: str, code: int) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except ConfigError as exc:
        _fail("invalid configuration:\n  " + "\n  ".join(exc.problems), 2)
    except GuardError as exc:
        _fail(str(exc), 1)


def _settings(config: Path | None) -> Settings:
    return load_settings(config)


def _quiet_logs(level: str) -> None:
    """Library chatter (DEBUG) would interleave with the command's output; keep INFO and up."""
    logger.remove()
    logger.add(sys.stderr, level=level if level.upper() != "DEBUG" else "INFO")


class _Stages:
    """Rich progress: one line per build stage, finished ones ticked with their duration."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.current: TaskID | None = None

    def stage(self, name: str) -> None:
        self.finish()
        self.current = self.progress.add_task(name, total=1, detail="")

    def detail(self, line: str) -> None:
        if self.current is not None:
            self.progress.update(self.current, detail=line[-70:])

    def finish(self) -> None:
        if self.current is not None:
            self.progress.update(self.current, completed=1, detail="[green]done")
            self.current = None


@app.command()
def build(
    offline: bool = typer.Option(
        False, "--offline", help="No registry: debootstrap + docker import (needs root)."
    ),
    image: str | None = ImageOpt,
    mirror: str | None = typer.Option(None, "--mirror", help="Debian mirror for --offline."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Rootfs/.deb cache."),
    config: Path | None = ConfigOpt,
) -> None:
    """Build the toolbox sandbox image (curl, jq, dig, nc, ps, python3, psql, redis-cli)."""
    from guard.sandbox import images
    from guard.sandbox.docker import connect

    with _errors():
        settings = _settings(config)
        _quiet_logs(settings.log_level)
        name = image or settings.sandbox.image
        client = connect(timeout=Timeouts.build)
        t0 = time.monotonic()
        columns = (
            SpinnerColumn(finished_text="[green]✓"),
            TextColumn("[bold]{task.description}"),
            TimeElapsedColumn(),
            TextColumn("[dim]{task.fields[detail]}"),
        )
        with Progress(*columns, console=err, transient=False) as progress:
            stages = _Stages(progress)
            if offline:
                images.build_offline(
                    client,
                    name,
                    cache_dir=cache_dir,
                    mirror=mirror,
                    on_stage=stages.stage,
                    on_detail=stages.detail,
                )
            else:
                stages.stage("docker build (pulls debian:bookworm-slim)")
                images.build_online(client, name, on_detail=stages.detail)
            stages.finish()
        err.print(f"built [bold]{name}[/] in {time.monotonic() - t0:.1f}s")


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    command: list[str] = typer.Argument(..., help="The command and its arguments (after --)."),
    network: str | None = typer.Option(None, "--network", help="Docker network to join."),
    secret: list[str] = typer.Option(
        [], "--secret", help="Pass this env var of Guard's into the sandbox (redacted)."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds (default from config)."),
    image: str | None = ImageOpt,
    config: Path | None = ConfigOpt,
) -> None:
    """Run one command in a fresh sandbox: `guard sandbox run [--network NAME] -- CMD...`."""
    from guard.sandbox import SandboxGrants, create_sandbox
    from guard.sandbox.kinds import resolve_backend

    with _errors():
        settings = _settings(config)
        _quiet_logs(settings.log_level)
        try:
            grants = SandboxGrants(network=network, secrets=secret)
        except ValidationError as exc:
            raise ConfigError(format_validation_error("command line", exc)) from None
        backend = resolve_backend(settings.sandbox, settings.kubernetes)
        client = backend.connect(settings.kubernetes) if backend.connect is not None else None
        if backend.reap is not None:
            backend.reap(client, settings.sandbox, settings.kubernetes)
        redactor = Redactor()
        redactor.register_all(settings.secret_values(), "guard-setting")
        sandbox = create_sandbox(
            settings.sandbox,
            incident_id=f"cli-{secrets.token_hex(4)}",
            grants=grants,
            client=client,
            image=image,
            redactor=redactor,
            cluster=settings.kubernetes,
            backend=backend,
        )

        async def once() -> int:
            task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            if task is not None:
                loop.add_signal_handler(signal.SIGTERM, task.cancel)
            try:
                result = await sandbox.run(command, timeout=timeout)
            finally:
                await sandbox.close()
            _echo(result.stdout, sys.stdout.write)
            sys.stdout.flush()
            _echo(result.stderr, sys.stderr.write)
            sys.stderr.flush()
            notes = [
                n
                for n, on in (("timed out", result.timed_out), ("OOM-killed", result.oom_killed))
                if on
            ]
            err.print(
                f"[dim]exit {result.exit_code} in {result.duration:.2f}s"
                + (f" ({', '.join(notes)})" if notes else "")
                + "[/]",
                highlight=False,
            )
            return result.exit_code

        code = asyncio.run(once())
    raise typer.Exit(code)


def _echo(text: str, write: Callable[[str], object]) -> None:
    if text:
        write(text if text.endswith("\n") else text + "\n")


@app.command()
def reap() -> None:
    """Remove every Guard sandbox container on this engine, including a running Guard's."""
    from guard.sandbox.docker import connect, reap_orphans

    with _errors():
        removed = reap_orphans(connect())
    err.print(f"removed {removed} sandbox container(s)")
