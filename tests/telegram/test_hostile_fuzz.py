"""Fuzz (issue 13): 10,000 random and hostile lines through the logfile monitor and the Telegram
handlers at once. No exception escapes, and the event loop's longest stall stays under 200 ms
(measured by a 10 ms ticker; the bound is what the issue asks, measured generously).

The 10,000 lines are one seeded sequence, run as two halves of 5,000 (``HALVES``): scripts/test
runs them in two processes, a core each (one process took 150-200 s of one core)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from guard.app import freeze_startup_heap
from guard.monitors.logfile import LogfileMonitor
from guard.playbooks.models import LogfileMonitorSpec
from tests.helpers.telegram import ADMIN, STRANGER
from tests.monitors.test_hostile_matching import RULES, max_stall

if TYPE_CHECKING:
    from tests.telegram.conftest import World

LINES = 10_000
HALVES = 2
PIECES = [
    "ERROR",
    "timeout",
    "WARN",
    " ",
    "\t",
    "é",
    "\u017f",
    "\u212a",
    "😀",
    "\u202e",
    "\u200f",
    "\x1b[2J",
    "\x1b]0;pwned\x07",
    "\x00",
    "\r",
    "\x0b",
    "\x1c",
    "\x85",
    "<b>",
    "</i>",
    "&amp;",
    "&",
    "[/x]",
    "[bold]",
    "{{ incident.message }}",
    "{% raw %}",
    "$(touch /tmp/x)",
    "`id`",
    "'",
    '"',
    "\\",
    "²",
    "\u0661",
    "99999999999999999999999",
    "#",
    "-",
    "--",
    "docker.restart",
    "curl",
    "http://a/",
    "ab ",
    "twice",
    "a" * 30 + "!",
    "x" * 40,
    "ERROR " * 200,
    "\ufffd",
    "\ud7ff",
]


def fuzz_line(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.002:
        return rng.choice(["ERROR ", "ab ", "a", "é x"]) * rng.randrange(10_000, 60_000)
    if roll < 0.05:
        return (
            "".join(chr(rng.randrange(1, 0x2FFFF)) for _ in range(rng.randrange(1, 80)))
            .encode("utf-8", "replace")
            .decode("utf-8", "replace")
        )
    return "".join(rng.choices(PIECES, k=rng.randrange(0, 12)))


def log_bytes(rng: random.Random, line: str) -> bytes:
    raw = line.encode("utf-8", "surrogatepass").replace(b"\n", b" ")
    if rng.random() < 0.03:
        raw += bytes([rng.randrange(0x80, 0x100)])  # invalid UTF-8
    return raw + b"\n"


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


@pytest.mark.slow
@pytest.mark.serial  # it measures the event loop's worst stall: alone, not beside 3 other workers
@pytest.mark.timeout(900)
@pytest.mark.parametrize("half", range(HALVES))
async def test_ten_thousand_hostile_lines_through_logs_and_telegram(
    tmp_path: Path, world: World, half: int
) -> None:
    rng = random.Random(13)
    every = [fuzz_line(rng) for _ in range(LINES)]
    share = LINES // HALVES
    lines = every[half * share : (half + 1) * share]
    rng = random.Random(13 + half)  # the log's own bytes (invalid UTF-8 here and there)
    log = tmp_path / "fuzz.log"
    log.write_bytes(b"")
    monitor = LogfileMonitor(
        LogfileMonitorSpec.model_validate(
            {
                "id": "fuzz",
                "type": "logfile",
                "path": str(log),
                "start": "beginning",
                "max_line_bytes": 16384,
                "rules": [*RULES, {"kind": "any", "pattern": r"\bERROR\b|\x1b|[^\x00-\x7f]"}],
            }
        )
    )
    seen = 0

    async def logfile() -> None:
        nonlocal seen
        state: dict[str, object] = {}
        for at in range(0, len(lines), 500):
            chunk = b"".join(log_bytes(rng, line) for line in lines[at : at + 500])
            await asyncio.to_thread(_append, log, chunk)
            obs = await monitor.check(state)
            state = obs.state
            seen += sum(s.count for s in obs.signals)

    async def telegram() -> None:
        for i, line in enumerate(lines):
            text = line.replace("\x00", "") or "."
            kind = i % 5
            if kind == 0:
                await world.text(ADMIN, text)  # a reply to an incident message
            elif kind == 1:
                await world.text(STRANGER, text)
            elif kind == 2:
                await world.text(ADMIN, f"/fix {text}", reply_to=None)
            elif kind == 3:
                await world.text(ADMIN, "/" + text.lstrip("/"), reply_to=None)
            else:
                data = text.encode()[:64].decode("utf-8", "ignore") or "x"
                await world.handlers.on_callback(world.press(ADMIN, data, 77), None)  # type: ignore[arg-type]
            if i % 50 == 0:
                await asyncio.sleep(0)

    # As `guard run` does once started: what the imports built is frozen out of the collector,
    # so a full collection does not walk every module's objects (guard.app.freeze_startup_heap).
    freeze_startup_heap()
    _, stall = await max_stall(asyncio.gather(logfile(), telegram()))
    print(f"fuzz: {len(lines)} lines, {seen} matched, worst event-loop stall {stall * 1000:.1f} ms")
    assert stall < 0.2, f"the event loop stalled {stall * 1000:.0f} ms"
    assert seen > 0
