"""``guard.cli.plaintable`` prints what Rich's ``Table`` prints, to the byte (issue 17)."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from guard.cli import plaintable

pytestmark = pytest.mark.unit

HEADER = ("id", "state", "severity", "count", "title", "last seen")
TEXTS = (False, False, False, False, True, False)
WORDS = ["a", "http", "status", "on", "svc-12", "x" * 30, "", "[REDACTED:guard-secret]", "a-b.c_d"]


def rich_text(header, rows, texts, width: int, colour: str | None = None) -> str:
    console = Console(
        file=io.StringIO(),
        width=width,
        highlight=False,
        color_system=colour,  # type: ignore[arg-type]
        force_terminal=colour is not None,
    )
    table = Table(*header, box=None)
    for row in rows:
        table.add_row(*(Text(c) if t else c for c, t in zip(row, texts, strict=True)))
    console.print(table)
    value = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(value, str)
    return value


def title(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randrange(0, 9))]
    if rng.random() < 0.1:
        return " " * rng.randrange(1, 4) + "lead and trail" + " " * rng.randrange(1, 12)
    return (" " * rng.choice([1, 1, 1, 2, 3])).join(words)


def random_rows(rng: random.Random) -> list[tuple[str, ...]]:
    return [
        (
            str(rng.randrange(1, 10 ** rng.randrange(1, 7))),
            rng.choice(["open", "awaiting_human", "resolved", "muted", "escalated"]),
            rng.choice(["info", "warning", "critical", "x" * rng.randrange(0, 40)]),
            str(rng.randrange(0, 100000)),
            title(rng),
            "2026-12-04 08:30:24",
        )
        for _ in range(rng.randrange(0, 12))
    ]


def test_declines_what_rich_must_judge() -> None:
    row = ("1", "open", "critical", "3", "title", "2026-12-04 08:30:24")
    assert plaintable.render(HEADER, [row], TEXTS, 80) is not None
    for cell, index in [
        ("ünïcödé", 4),  # wide or combining characters: Rich's cell widths
        ("tab\there", 4),  # tabs expand
        ("[bold]x", 2),  # markup, in a str cell
        (":fire:", 1),  # an emoji code, in a str cell
    ]:
        changed = list(row)
        changed[index] = cell
        assert plaintable.render(HEADER, [tuple(changed)], TEXTS, 80) is None, cell
    assert plaintable.render(HEADER, [row], TEXTS, 2) is None  # narrower than the padding
