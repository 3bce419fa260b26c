"""``guard run`` caps glibc's malloc arenas before its threads start (memory at scale, issue 48),
unless the environment says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

# each thread allocates, then the process reports how many arenas glibc made (malloc_info)
COUNT_ARENAS = """
import ctypes, os, sys, tempfile, threading
from guard.app.process import limit_malloc_arenas
print(limit_malloc_arenas())
keep = []
together = threading.Barrier(8)  # all alive at once: each asks for an arena of its own
def work():
    together.wait()
    keep.append([bytearray(4096) for _ in range(64)])
    together.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = libc.fclose.argtypes = None
with tempfile.TemporaryFile() as f:
    stream = libc.fdopen(os.dup(f.fileno()), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    f.seek(0)
    print(f.read().count(b"<heap nr="))
"""


def _arenas(env: dict[str, str]) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", COUNT_ARENAS], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_threads_share_two_arenas_unless_the_environment_sets_the_limit() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _arenas(env) == ("True", 2)
    said, arenas = _arenas({**env, "MALLOC_ARENA_MAX": "4"})
    assert said == "False" and arenas > 2  # the environment's limit, not Guard's
