"""A lesson's text: the trigger regex a message gives (guard.skills.lesson; the writer that
uses it is tested in test_skills.py and test_revisions.py)."""

from __future__ import annotations

import re

import pytest

from guard.skills.lesson import message_regex

pytestmark = pytest.mark.unit


def test_message_regex_generalises_the_varying_parts():
    rx = message_regex(
        "2026-12-02T10:00:00Z req 89bbae50 from 10.0.0.1 took 35ms: too many clients"
    )
    assert re.search(
        rx, "2027-01-01T00:00:00Z req deadbeef from 10.9.9.9 took 2ms: too many clients"
    )
    assert not re.search(rx, "2027-01-01T00:00:00Z req deadbeef from 10.9.9.9 took 2ms: disk full")
