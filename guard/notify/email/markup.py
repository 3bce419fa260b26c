"""Plain text for mail (``PlainMarkup``), with the way to answer: email has no buttons, so a
question names its console page (``public_url``), or the CLI verbs when there is none.
Tested by tests/notify/email/test_email_channel.py."""

from __future__ import annotations

from guard.notify.base import HumanRequest
from guard.notify.channel import Buttons
from guard.notify.plain import PlainMarkup

LIMIT = 50_000


class EmailMarkup(PlainMarkup):
    def __init__(self) -> None:
        super().__init__(LIMIT)

    def request(self, req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
        text, buttons = super().request(req, signal)
        if req.url:
            answer = f"Answer in the console: {req.url}"
        else:
            answer = (
                f"Answer with `guard approve {req.incident_id}` or `guard deny "
                f"{req.incident_id}` (set public_url for a link to the console)"
            )
        return f"{text}\n\n{answer}", buttons
