"""A real ``guard run`` asks by mail through a real SMTP server on 127.0.0.1 (STARTTLS, AUTH)
and is SIGKILLed after the server took a mail, before Guard stored its id (``bench.crash``'s
``email`` scenario); restarted, it sends nothing twice: the question and the daily report
arrive once each, and the follow-up goes out in the question's thread."""

from __future__ import annotations

import pytest

from bench.crash import run_case
from bench.crash_email import Email


@pytest.mark.parametrize("point", Email.points)
def test_a_kill_9_after_the_server_took_a_mail_sends_nothing_twice(point: str) -> None:
    result = run_case(Email(), point)
    assert result.green, (result.error, result.checks)  # killed there, and every check green
