"""``guard demo``: watch Guard ask, learn and heal, on the local Docker engine."""

from __future__ import annotations

import asyncio
import json

import typer

from guard.cli.common import err, fail, out
from guard.telemetry.logsetup import setup_logging


def demo(as_json: bool = typer.Option(False, "--json", help="Print the timings as JSON.")) -> None:
    """Start a victim container, break it twice, and watch Guard learn the fix and heal it."""
    from docker.errors import DockerException

    from guard.app.demo import IMAGE, Demo

    setup_logging("WARNING")
    try:
        timings = asyncio.run(Demo(err if as_json else out).run())
    except (DockerException, TimeoutError) as exc:
        fail(
            f"the demo needs a Docker engine: {exc}"
            if isinstance(exc, DockerException)
            else str(exc)
        )
    if as_json:
        typer.echo(json.dumps(timings, indent=2))
        return
    out.print("[bold]timings[/bold]")
    for key, value in timings.items():
        out.print(f"   {key:<24} {value:>7.3f} s")
    out.print("cleaned up: the victim container and the temporary Guard home")
    out.print(f"kept the image {IMAGE} for your own victims (README: Quick start)")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
