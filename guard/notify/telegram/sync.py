"""Keep Telegram in step with the store: the channel-neutral ``guard.notify.sync.Sync`` for the
gateway's chat, in HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from guard.notify import sync
from guard.notify.telegram.channel import NAME
from guard.notify.telegram.markup import HtmlMarkup

if TYPE_CHECKING:
    from guard.notify.answers.port import GatewayPort


class Sync(sync.Sync):
    def __init__(self, gateway: GatewayPort) -> None:
        notifier = gateway.notifier
        super().__init__(gateway.db, NAME, str(gateway.chat_id), notifier.closed_text, HtmlMarkup())
