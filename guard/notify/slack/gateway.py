"""The Slack runner inside ``guard run``: receiving (Socket Mode by default, or the signed HTTP
endpoint); the outbox worker, its sync and the daily report on ``report.cron`` are every
channel's (``guard.notify.gateway``).

- Socket Mode: slack_sdk's client opens ``apps.connections.open`` with the app-level token and
  keeps the websocket up (it reconnects on ``disconnect`` and on a dead connection). Each
  envelope is handled first and acked after: a delivery cut short comes again and is skipped
  (``Inbound.handled``), so a reconnect neither loses nor doubles a press.
- HTTP (``slack.mode: http``): ``httpmode`` serves ``/slack/events``, believing only requests
  signed with the signing secret within five minutes.
- Every delivery becomes a neutral ``Inbound`` (``updates``) and goes to the channel-neutral
  answers (``guard.notify.answers``), which answer through the outbox in mrkdwn.
- Slack being unreachable at start is not an error: the runner keeps trying in the background
  (honouring a 429's ``Retry-After``) while monitoring goes on and the outbox fills up.

Tested by tests/notify/test_slack_gateway.py.
"""

from __future__ import annotations

import contextlib
from typing import Any

from loguru import logger
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from guard.config import Settings
from guard.notify.answers import senders
from guard.notify.answers.presses import Answers
from guard.notify.channel import ChannelError, Retry
from guard.notify.gateway import Gateway
from guard.notify.runner import ChannelRunner
from guard.notify.running_gate import gate_from_settings
from guard.notify.slack.channel import NAME, SlackChannel, client, errors
from guard.notify.slack.markup import SlackMarkup
from guard.notify.slack.mrkdwn import cut, esc, plain
from guard.notify.slack.notifier import SlackNotifier
from guard.notify.slack.updates import Delivery, event
from guard.ports.running import HealthSource
from guard.store.db import Database


async def dispatch(answers: Answers, delivery: Delivery) -> None:
    """Act once on what a person did (a delivery seen before is skipped)."""
    found = event(delivery)
    if found is None or not await answers.remember(found):
        return
    act = {"press": answers.press, "command": answers.command}
    try:
        await act.get(found.kind, answers.text)(found)
    except SlackApiError as exc:  # an immediate answer Slack refused: the effect stands
        logger.warning("slack: answering a {}: {}", found.kind, exc)


class SlackGateway(Gateway):
    name = NAME
    charts = False  # its report is the text alone

    def __init__(
        self, settings: Settings, db: Database, runtime: HealthSource | None = None
    ) -> None:
        sl = settings.slack
        assert sl.bot_token is not None and sl.channel is not None
        super().__init__(settings, db, runtime, sl.channel, SlackNotifier(settings, db))
        self.auth = senders.Authoriser(NAME, db, gate_from_settings(settings, db))
        self.web = client(sl.bot_token.get_secret_value(), sl.api_base_url)
        self.answers = Answers(self, NAME, SlackMarkup())
        self.runner = ChannelRunner(
            SlackChannel(self.web), db, self.notifier, group_wait=sl.group_wait
        )
        self.socket: SocketModeClient | None = None
        self.http: Any = None

    async def connect(self) -> None:
        delay = 1.0
        while not self.stopping.is_set():
            try:
                with errors():
                    who = await self.web.auth_test()
                break
            except ChannelError as exc:
                wait = exc.after if isinstance(exc, Retry) else delay
                logger.warning("slack not reachable yet ({}); retrying in {:g}s", exc, wait)
                await self.pause(wait)
                delay = min(delay * 2, 30.0)
        if self.stopping.is_set():
            return
        try:
            await self._serve()
        except Exception as exc:
            logger.error("slack runner could not start: {} (monitoring goes on)", exc)
            return
        self.ready.set()
        logger.info("slack connected as {} ({})", who.get("user"), self.settings.slack.mode)

    async def _serve(self) -> None:
        sl = self.settings.slack
        # before any delivery (a reply may quote a post in flight); the outbox goes on
        # whatever becomes of receiving
        await self.run_outbox(self.runner)
        if sl.mode == "http":
            from guard.notify.slack.httpmode import serve

            assert sl.signing_secret is not None
            self.http = await serve(
                sl.listen, sl.port, sl.signing_secret.get_secret_value(), self.handle
            )
        else:
            assert sl.app_token is not None
            self.socket = SocketModeClient(
                sl.app_token.get_secret_value(),
                web_client=client(sl.app_token.get_secret_value(), sl.api_base_url),
                ping_interval=5,
            )
            self.socket.socket_mode_request_listeners.append(self._on_envelope)
            # (the SDK retries until it is up; ``stop`` closes it first)
            await self.socket.connect()  # type: ignore[no-untyped-call]

    async def _on_envelope(self, socket: AsyncBaseSocketModeClient, req: SocketModeRequest) -> None:
        try:
            await self.handle(Delivery(req.type, req.payload))
        except Exception:
            logger.opt(exception=True).error("slack: a {} delivery failed; not acked", req.type)
            return  # Slack delivers it again
        await socket.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))

    async def handle(self, delivery: Delivery) -> None:
        """Act on a delivery, answering a press with this runner's Web API client."""
        await dispatch(self.answers, Delivery(delivery.kind, delivery.payload, self.web))

    async def closing(self) -> None:
        if self.socket is not None:  # first: a connect still retrying ends with it
            with contextlib.suppress(Exception):
                await self.socket.close()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self.http is not None:
            with contextlib.suppress(Exception):
                await self.http.cleanup()
        with contextlib.suppress(Exception):
            if self.web.session is not None:
                await self.web.session.close()

    def report_calls(self, chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
        return report_calls(chat, text)


def report_calls(chat: str, text: str) -> list[dict[str, Any]]:
    """The daily report in ``chat``: its text in mrkdwn (no chart)."""
    return [{"method": "send", "chat_id": chat, "text": cut(esc(plain(text))), "role": "report"}]
