"""Slack's ``Markup``: mrkdwn (``mrkdwn``), and a grouped message's lines.

Tested by tests/notify/test_slack_channel.py.
"""

from __future__ import annotations

from guard.notify.channel import Buttons
from guard.notify.labels import STATE_LABEL
from guard.notify.outbox import grouping
from guard.notify.slack import mrkdwn
from guard.notify.slack.mrkdwn import LIMIT, RUN_COMMAND, cut, esc, inline
from guard.store.models import Incident, MessageGroupMember

LINE_CHARS = 300


class SlackMarkup:
    limit = LIMIT
    run_command = RUN_COMMAND

    def escape(self, text: object) -> str:
        return esc(text)

    def cut(self, text: str, limit: int | None = None, more: str = "") -> str:
        return cut(text, limit or LIMIT, more)

    def code(self, text: object) -> str:
        return inline(text)

    def bold(self, text: object) -> str:
        return f"*{esc(text)}*"

    request = staticmethod(mrkdwn.request)
    header = staticmethod(mrkdwn.header)
    closed = staticmethod(mrkdwn.closed)
    update = staticmethod(mrkdwn.update)
    pointer = staticmethod(mrkdwn.pointer)

    def member_line(self, incident: Incident | None, incident_id: int) -> str:
        if incident is None:
            return f"*#{incident_id}*"
        first = incident.message.splitlines()[0] if incident.message else ""
        return cut(
            f"*#{incident_id}* [{esc(incident.severity)}] {esc(incident.title)} · "
            f"seen {incident.count} times\n{inline(first[:200])}",
            LINE_CHARS,
        )

    def closed_line(self, incident: Incident | None, incident_id: int, closed: str) -> str:
        title = esc(incident.title) if incident is not None else ""
        outcome = " · ".join(p for p in closed.partition("\n\n")[2].splitlines() if p.strip())
        return cut(f"~#{incident_id}~ {title}: {outcome or STATE_LABEL['resolved']}", LINE_CHARS)

    def group(self, members: list[MessageGroupMember]) -> tuple[str, Buttons]:
        live = sum(1 for m in members if m.live)
        head = (
            f"*{len(members)} incidents* opened together"
            + (f"; {live} still need a human" if live else "")
            + ".\nUse the buttons, or reply in the thread `#ID FIX` to send a fix for one."
        )
        lines = [m.text for m in members]
        text = "\n\n".join([head, *lines])
        for shown in range(len(lines) - 1, -1, -1):
            if len(text) <= LIMIT:
                break
            rest = ", ".join(f"#{m.incident_id}" for m in members[shown:])
            text = "\n\n".join([head, *lines[:shown]]) + f"\n\nAlso {rest}: see their buttons."
        return cut(text), grouping.live_buttons(members)
