"""Blocks of whole lines: deciding a run's end on the chunk alone changes no run."""

from __future__ import annotations

import io
import random
from collections.abc import Callable

import pytest

from guard.monitors import logblocks
from guard.monitors.logblocks import Blocks
from guard.monitors.multiline import Framer
from guard.playbooks.models import MultilineSpec

pytestmark = pytest.mark.unit

LINES = [
    b"2026-12-02T18:00:00Z INFO served /api in 12ms",
    b"2026-12-02T18:00:01Z ERROR payment failed",
    b"Traceback (most recent call last):",
    b'  File "app.py", line 3, in <module>',
    b"    main()",
    b"ValueError: bad",
    b"java.lang.IllegalStateException: boom",
    b"\tat com.example.App.main(App.java:10)",
    b"Caused by: java.io.IOException: gone",
    b"\t... 3 more",
    b"panic: runtime error",
    b"",
    b"goroutine 1 [running]:",
    b"main.main()",
    b"\t/app/main.go:5 +0x1d",
    b"x" * 90,
]


def _log(rng: random.Random) -> bytes:
    data = b"\n".join(rng.choices(LINES, k=rng.randrange(1, 120))) + b"\n"
    return data[: len(data) - rng.randrange(0, 30)]  # often a partial last line


@pytest.mark.parametrize("chunk", [7, 64, 300])
def test_runs_are_the_same_as_when_cut_on_the_joined_buffer(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logblocks, "CHUNK", chunk)
    framer = Framer(MultilineSpec())
    rng = random.Random(chunk)
    for _ in range(300):
        data = _log(rng)
        for final, hold in [(False, False), (False, True), (True, False)]:
            fast = _blocks(data, framer, final, hold, framer.tail_start)
            joined = _blocks(data, framer, final, hold, None)
            assert list(fast) == list(joined), data
            assert fast.held == joined.held


def _blocks(
    data: bytes, framer: Framer, final: bool, hold: bool, start: Callable[[bytes, int], int] | None
) -> Blocks:
    tail = framer.tail_start
    return Blocks(
        io.BytesIO(data), 200, final=final, budget=1 << 20, tail=tail, tail_start=start, hold=hold
    )


def test_without_events_every_run_ends_at_the_chunks_last_newline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logblocks, "CHUNK", 10)
    runs = list(Blocks(io.BytesIO(b"abc\ndefgh\nij\nklmnopq"), 100, final=False, budget=1 << 20))
    assert runs == [(b"abc\ndefgh\n", 10, True), (b"ij\n", 3, True)]
