"""Telegram's ``Markup``: HTML parse mode (``messages``), and the grouped message's lines."""

from __future__ import annotations

from guard.notify.base import HumanRequest, IncidentUpdate
from guard.notify.channel import Buttons
from guard.notify.labels import STATE_LABEL
from guard.notify.outbox import grouping
from guard.notify.telegram import messages
from guard.notify.telegram.messages import LIMIT, RUN_COMMAND, cut, esc
from guard.store.models import Incident, MessageGroupMember

LINE_CHARS = 300


def member_line(incident: Incident | None, incident_id: int) -> str:
    if incident is None:
        return f"<b>#{incident_id}</b>"
    first = incident.message.splitlines()[0] if incident.message else ""
    return cut(
        f"<b>#{incident_id}</b> [{esc(incident.severity)}] {esc(incident.title)} · "
        f"seen {incident.count} times\n<code>{esc(first[:200])}</code>",
        LINE_CHARS,
    )


def closed_line(incident: Incident | None, incident_id: int, closed_html: str) -> str:
    """A member's line once its question is over: what the closing edit said, in one line."""
    title = esc(incident.title) if incident is not None else ""
    _, _, outcome = closed_html.partition("\n\n")
    outcome = " · ".join(part for part in outcome.splitlines() if part.strip())
    return cut(
        f"<s>#{incident_id}</s> {title}: {outcome or esc(STATE_LABEL['resolved'])}", LINE_CHARS
    )


def render(members: list[MessageGroupMember]) -> tuple[str, Buttons]:
    """The group message's text and buttons."""
    live = sum(1 for m in members if m.live)
    head = (
        f"<b>{len(members)} incidents</b> opened together"
        + (f"; {live} still need a human" if live else "")
        + ".\n"
        "Use the buttons, or reply <code>#ID FIX</code> to send a fix for one."
    )
    text = _fit(head, [m.text for m in members], [m.incident_id for m in members])
    return text, grouping.live_buttons(members)


def _fit(head: str, lines: list[str], ids: list[int]) -> str:
    """The head and every incident's line, if they fit in one message; else as many whole
    lines as fit and the ids of the rest, so no incident drops out of the text unnamed (their
    buttons are there either way)."""
    full = "\n\n".join([head, *lines])
    if len(full) <= LIMIT:
        return full
    for shown in range(len(lines) - 1, -1, -1):
        rest = ", ".join(f"#{i}" for i in ids[shown:])
        text = "\n\n".join([head, *lines[:shown]]) + f"\n\nAlso {rest}: see their buttons."
        if len(text) <= LIMIT:
            return text
    return cut(full)


class HtmlMarkup:
    limit = LIMIT
    run_command = RUN_COMMAND

    def escape(self, text: object) -> str:
        return esc(text)

    def cut(self, text: str, limit: int | None = None, more: str = "") -> str:
        return cut(text, limit or LIMIT, more)

    def code(self, text: object) -> str:
        return f"<code>{esc(text)}</code>"

    def bold(self, text: object) -> str:
        return f"<b>{esc(text)}</b>"

    def request(self, req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
        return messages.render_request(req, signal)

    def header(self, incident_id: int, title: str, severity: str, target: str, count: int) -> str:
        return messages.incident_header(incident_id, title, severity, target, count)

    def closed(self, header: str, state: str, text: str) -> str:
        return messages.render_closed(header, state, text)

    def update(self, update: IncidentUpdate) -> str:
        return messages.render_update(update)

    def pointer(self, incident_id: int) -> str:
        return messages.pointer(incident_id)

    def member_line(self, incident: Incident | None, incident_id: int) -> str:
        return member_line(incident, incident_id)

    def closed_line(self, incident: Incident | None, incident_id: int, closed: str) -> str:
        return closed_line(incident, incident_id, closed)

    def group(self, members: list[MessageGroupMember]) -> tuple[str, Buttons]:
        return render(members)
