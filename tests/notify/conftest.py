"""The local pagers of the paging tests (a PagerDuty Events API v2 server and a webhook
receiver that checks Guard's signature) and the local Slack, each started for a test and
stopped after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.pagerduty import PagerDutyServer
from tests.fakes.pagerduty import running as pagerduty
from tests.fakes.slack import SlackServer
from tests.fakes.webhook_receiver import WebhookReceiver, receiving


@pytest.fixture
def pd() -> Iterator[PagerDutyServer]:
    with pagerduty() as server:
        yield server


@pytest.fixture
def hook() -> Iterator[WebhookReceiver]:
    with receiving() as receiver:
        yield receiver


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    server = SlackServer().start()
    try:
        yield server
    finally:
        server.stop()
