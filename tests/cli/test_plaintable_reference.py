"""``guard.cli.plaintable`` against Rich on 3,000 random tables, to the byte (issue 17).

Not a ``unit`` test: Rich's own rendering of the reference takes about 10 s, so
``scripts/check`` (under a minute) leaves it to ``scripts/test``, which CI runs.
"""

from __future__ import annotations

import random

from guard.cli import plaintable
from tests.cli.test_plaintable import HEADER, TEXTS, random_rows, rich_text, title


def test_random_tables_match_rich() -> None:
    rng = random.Random(17)
    checked = 0
    for _ in range(3000):
        rows = random_rows(rng)
        header = HEADER if rng.random() < 0.7 else tuple(title(rng) or "h" for _ in HEADER)
        width = rng.choice([rng.randrange(1, 60), rng.randrange(60, 220), 80])
        colour = rng.choice([None, None, "standard", "truecolor"])
        mine = plaintable.render(header, rows, TEXTS, width, bold_header=colour is not None)
        if mine is None:
            continue
        assert mine == rich_text(header, rows, TEXTS, width, colour), (header, rows, width)
        checked += 1
    assert checked > 1500  # most of them are plain enough to render
