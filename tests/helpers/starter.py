"""Helpers for the starter skills' end-to-end tests: a fault asked about, approved, healed."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tests.conftest import GuardHome
from tests.helpers.agent import find, show, wait_for


def approve_and_heal(
    home: GuardHome,
    log: Path,
    kind: str,
    skill: str,
    before: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], str]:
    """The incident of ``kind`` asked about, approved with ``skill`` (after ``before``, what the
    human does first), resolved: (its record as asked, the question Guard put to the human, from
    the running guard's log as the console shows it)."""
    asked = wait_for(partial(find, home, kind=kind, state="awaiting_human"), 90, f"{kind} asked")
    record = show(home, asked["id"])
    marker = f"Incident #{asked['id']} needs a human"
    said = wait_for(lambda: marker in log.read_text() and log.read_text(), 30, "the question")
    question = said[said.index(marker) :]
    if before is not None:
        before()
    home.cli("approve", str(asked["id"]), "--skill", skill)
    try:
        wait_for(partial(find, home, id=asked["id"], state="resolved"), 90, f"{kind} healed")
    except AssertionError:
        timeline = show(home, asked["id"])["timeline"]
        said = "\n".join(f"{t['type']}: {t['message']}" for t in timeline)
        raise AssertionError(f"incident #{asked['id']} was not healed:\n{said}") from None
    time.sleep(3)  # the fault stayed gone: the monitor that fired did not reopen it
    assert find(home, id=asked["id"], state="resolved"), show(home, asked["id"])["timeline"][-3:]
    return record, question[: question.find("  deny:")]
