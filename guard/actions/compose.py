"""``compose.up SERVICE``: ``docker compose up -d SERVICE`` on the project's own compose file.

Only the file named by ``compose.file`` (and its ``compose.project``), and only a service that
file defines: a human or a model cannot point Guard at another file or invent a service. The
command runs as argv (``docker compose``, or ``docker-compose`` where the plugin is missing),
never through a shell, bounded by ``compose.timeout``; on a time-out its process group is
killed. Its output, cut to the last lines, is the step's message (redacted by the runner).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.util.textsafe import line_tail

SERVICE_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}")
OUTPUT_CAP = 64 * 1024


def services(path: Path) -> list[str]:
    """The services ``path`` defines; an ``ActionError`` names the file and the fix."""
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ActionError(f"compose.file {path}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ActionError(f"compose.file {path} is not valid YAML: {exc}") from None
    found = (doc or {}).get("services") if isinstance(doc, dict) else None
    if not isinstance(found, dict) or not found:
        raise ActionError(f"compose.file {path} defines no services: is it a compose file?")
    return sorted(str(s) for s in found)


def compose_command() -> list[str]:
    """``docker compose`` when the CLI plugin answers, else ``docker-compose``."""
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run(
            [docker, "compose", "version"], capture_output=True, timeout=20, check=False
        )
        if probe.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy is None:
        raise ActionError(
            "compose.up needs Docker Compose: install the docker compose plugin or docker-compose"
        )
    return [legacy]


class Up:
    name = "compose.up"
    description = "start (or recreate) one service of the project's compose file (compose up -d)"
    params = ("service",)

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        conf = ctx.settings.compose
        if conf.file is None:
            raise ActionError(
                "compose.up needs the project's compose file: set compose.file in guard.yaml"
            )
        service = str(args.get("service") or "")
        if not SERVICE_NAME.fullmatch(service):
            raise ActionError("compose.up needs a service name, e.g. 'compose.up api'")
        known = await asyncio.to_thread(services, conf.file)
        if service not in known:
            raise ActionError(
                f"compose.up refuses service {service!r}: it is not in compose.file "
                f"{conf.file} (services: {', '.join(known)})"
            )
        argv = [*await asyncio.to_thread(compose_command), "-f", str(conf.file)]
        if conf.project:
            argv += ["-p", conf.project]
        argv += ["up", "-d", service]
        code, text, timed_out = await _run(argv, conf.file.parent, conf.timeout)
        how = f"timed out after {conf.timeout:g}s" if timed_out else f"exit {code}"
        return ActionResult(
            code == 0,
            f"compose up -d {service}: {how}\n{line_tail(text, 4000)}".rstrip(),
            {"service": service, "exit_code": code, "timed_out": timed_out},
        )


async def _run(argv: list[str], cwd: Path, limit: float) -> tuple[int | None, str, bool]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # its own process group, killed whole on a time-out
    )
    assert proc.stdout is not None
    stdout, kept = proc.stdout, bytearray()

    async def drain() -> None:
        while chunk := await stdout.read(8192):
            kept.extend(chunk[: max(0, OUTPUT_CAP - len(kept))])
        await proc.wait()

    try:
        await asyncio.wait_for(drain(), limit)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return None, "", True
    return proc.returncode, kept.decode("utf-8", "replace"), False


ACTIONS = [Up()]
