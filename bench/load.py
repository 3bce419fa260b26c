"""A steady background load for benchmarks: ``busy`` processes spinning on a core each.

A small VPS runs Guard beside the services it watches, at a load average of 1.5-2.5 on 2
cores; figures taken on an idle machine flatter whatever competes for the CPU (an event
subscriber's wake-up, a scheduled check). ``background_load(2)`` makes that load for as long as
the block runs: two interpreters in ``while True: pass`` (pure CPU, no memory or I/O), killed
with the block. ``python -m bench --compare`` measures quiet and under it (issue 48).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

SPIN = "while True: pass"
SETTLE = 3.0  # seconds for the scheduler to spread the spinners before a measurement


@contextlib.contextmanager
def background_load(busy: int = 2) -> Iterator[list[int]]:
    """``busy`` spinning processes for the block's duration; their pids."""
    procs = [
        subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
        for _ in range(busy)
    ]
    try:
        time.sleep(SETTLE if busy else 0)
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def load_average() -> float:
    """The one-minute load average."""
    return round(os.getloadavg()[0], 2)
