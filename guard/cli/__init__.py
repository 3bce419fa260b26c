"""The ``guard`` command line (``guard.cli.root``), with one command that skips Typer.

``guard incidents list`` is the command people run most and must answer in well under a
second at 100,000 incidents. Typer and its pydantic coercion cost ~0.1 s to import and build
before any command runs, so ``main`` hands that one command to ``guard.cli.fastlist`` first,
which answers only when it understands every argument and can read the store directly, and
otherwise lets Typer run as for every other command. Nothing here imports Typer.

At exit the whole heap is frozen out of the garbage collector: the interpreter's last
collections walked every imported module's objects again, 0.7 s of CPU at the end of each
command that loaded the store (2.5 -> 1.8 s for ``import guard.app``, measured). Only
reference cycles still alive at exit are affected; they were never promised a finaliser.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guard.cli.root import VERBS, LazyGroup, VerbStub, app, load_verb

__all__ = ["VERBS", "LazyGroup", "VerbStub", "app", "load_verb", "main"]


def main() -> None:
    """Console-script entry point."""
    atexit.register(gc.freeze)  # registered first: runs after every other exit handler
    if sys.argv[1:3] == ["incidents", "list"]:
        from guard.cli.fastlist import run as run_fast

        if run_fast(sys.argv[3:]):
            return
    from guard.cli.root import app

    app()


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("guard.cli.root"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
