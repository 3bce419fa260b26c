"""The ``guard`` command line (``guard.cli.root``), with one command that skips Typer.

``guard incidents list`` is the command people run most and must answer in well under a
second at 100,000 incidents. Typer and its pydantic coercion cost ~0.1 s to import and build
before any command runs, so ``main`` hands that one command to ``guard.cli.fastlist`` first,
which answers only when it understands every argument and can read the store directly, and
otherwise lets Typer run as for every other command. Nothing here imports Typer.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guard.cli.root import VERBS, LazyGroup, VerbStub, app, load_verb

__all__ = ["VERBS", "LazyGroup", "VerbStub", "app", "load_verb", "main"]


def main() -> None:
    """Console-script entry point."""
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
