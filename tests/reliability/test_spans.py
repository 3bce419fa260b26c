"""The span log the benchmarks read: off by default, and naming only points that exist."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from guard.harness import spans

GUARD = Path(spans.__file__).resolve().parent.parent  # guard/

pytestmark = pytest.mark.unit


def marked_points() -> set[str]:
    found: set[str] = set()
    for path in GUARD.rglob("*.py"):
        found |= set(re.findall(r'spans\.mark\(\s*"([a-z_.]+)"', path.read_text()))
    return found


def test_every_point_marked_is_listed_and_every_listed_point_is_marked() -> None:
    assert marked_points() == set(spans.SPANS)


def test_marks_are_kept_only_while_recording() -> None:
    spans.mark("resolved", "api")  # not recording: dropped
    assert not spans.enabled()
    with spans.recording() as marks:
        assert spans.enabled()
        worker = threading.Thread(target=spans.mark, args=("action.start", "api"))
        worker.start()
        worker.join()
        spans.mark("action.end", "api")
    spans.mark("resolved", "api")
    assert [(p, k) for p, k, _ in marks] == [("action.start", "api"), ("action.end", "api")]
    assert marks[0][2] <= marks[1][2]
    assert not spans.enabled()
