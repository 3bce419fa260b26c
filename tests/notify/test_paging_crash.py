"""A real ``guard run`` SIGKILLed while paging (``bench.crash``'s ``paging`` scenario), then
restarted: no page is lost, and none is acted on twice (PagerDuty opens one alert for the
incident's ``dedup_key``; the webhook receiver drops a repeated ``X-Guard-Delivery``)."""

from __future__ import annotations

import pytest

from bench.crash import run_case
from bench.crash_paging import Paging


@pytest.mark.parametrize(
    "point", ["page.claimed", "page.sent_before_mark", "page.sent_before_mark:3"]
)
def test_a_kill_while_paging_neither_loses_nor_doubles_a_page(point: str) -> None:
    result = run_case(Paging(), point)
    assert result.crashed, result.error
    assert not result.error, result.error
    red = {name: why for name, (ok, why) in result.checks.items() if ok is False}
    assert not red, red
    ok, why = result.checks["pages"]
    assert ok, why
