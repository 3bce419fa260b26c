"""The CLI's consoles: what they print goes through the redaction policy (an exit, like logs).

Kept apart from ``guard.cli.common`` so that ``guard.cli.fastlist`` can print without Typer.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from guard.redact import redact


class RedactingConsole(Console):
    """A console whose printed strings go through the redaction policy (an exit, like logs)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().print(*(redact(o) if isinstance(o, str) else o for o in objects), **kwargs)


err = RedactingConsole(stderr=True, highlight=False)
out = RedactingConsole(highlight=False)
