"""Chat HTML: the markup of the channels whose messages are a small HTML subset (``<b>``,
``<code>``, ``<pre>``, ``<s>``): everything from logs escaped, cut under the limit.

Such a channel refuses (or mangles) a message over its limit and HTML with a stray ``<`` or
``&``, or with a tag left open. Text is escaped first and cut afterwards (``cut``), on a line
boundary, never inside a tag or an entity such as ``&amp;``, and with the tags still open there
closed again; a cut message says where the whole text is (``guard incidents show``). Buttons
are plain ``(label, data)`` pairs here, so the outbox can store them as JSON; a button's data
is the opaque approval id (or ``fix:ID`` for the "send a fix" prompt). ``HtmlMarkup`` is the
``Markup`` of every channel that speaks this HTML; a channel folder uses it, and adds only how
its API carries it. Tested by tests/notify/test_html.py and the channel contract suites.
"""

from __future__ import annotations

import re
from html import escape

from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.channel import Buttons
from guard.notify.labels import STATE_LABEL, request_buttons
from guard.notify.outbox import grouping
from guard.store.models import Incident, MessageGroupMember
from guard.util.commandtext import oddities, short
from guard.util.textsafe import printable

RUN_COMMAND = "▶ Run proposal"
"""The label of a button that runs a command its own message shows whole (never grouped)."""
LIMIT = 4096
"""The longest message, in characters after entity parsing (the smallest of the HTML
channels' limits)."""


def esc(text: object) -> str:
    """``text`` for HTML parse mode: control characters gone, ``<``, ``>``, ``&`` escaped."""
    return escape(printable(text), quote=False)


def cut(html_text: str, limit: int = LIMIT, more: str = "") -> str:
    """``html_text`` (already escaped) cut to at most ``limit`` characters, ending with ``more``.

    The cut falls on a line break if one is near, never splits a tag or an ``&...;`` entity,
    and closes again every tag still open where it falls (innermost first).
    """
    if len(html_text) <= limit:
        return html_text
    tail = "\n…\n" + more
    room = limit - len(tail)
    head = html_text[:room]
    newline = head.rfind("\n")
    if newline > room * 0.8:
        head = head[:newline]
    while True:
        lt = head.rfind("<")
        if lt != -1 and ">" not in head[lt:]:
            head = head[:lt]
        amp = head.rfind("&")
        if amp != -1 and ";" not in head[amp:]:
            head = head[:amp]
        closing = "".join(f"</{name}>" for name in reversed(_open_tags(head)))
        over = len(head) + len(closing) - room
        if over <= 0:
            return head + closing + tail
        head = head[: len(head) - over]


_TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)[^<>]*>")


def _open_tags(html_text: str) -> list[str]:
    """The names of the tags open at the end of ``html_text``, outermost first."""
    stack: list[str] = []
    for m in _TAG.finditer(html_text):
        name = m.group(2).lower()
        if not m.group(1):
            stack.append(name)
        elif name in stack:
            del stack[len(stack) - 1 - stack[::-1].index(name) :]
    return stack


def pointer(incident_id: int) -> str:
    return f"Full text: <code>guard incidents show {incident_id}</code>"


REPORT_POINTER = "Full report: <code>guard report daily --print</code>"


def incident_header(incident_id: int, title: str, severity: str, target: str, count: int) -> str:
    return (
        f"<b>Incident #{incident_id}</b> [{esc(severity)}]: {esc(title)}\n"
        f"Target: <code>{esc(target)}</code> · seen {count} times"
    )


def render_request(req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
    """The incident message and its buttons (``signal``: the latest line that fired).

    An option that runs a command (a model's proposal) shows that command whole, with its
    digest; the evidence is cut first to make room. A command that cannot be shown whole (it
    is odd, or the message has no room) gets no button: one tap never runs unseen text."""
    head = [incident_header(req.incident_id, req.title, req.severity, req.target, req.count)]
    if signal:
        head.append(f"<pre>{esc(signal[:1000])}</pre>")
    head.append(esc(req.question))
    if req.url:
        head.append(f"Open: {esc(req.url)}")
    offered = [o for o in req.options if not o.command or not oddities(o.command)]
    body = "\n\n".join([*head, *_options(req.options, offered)])
    if len(body) > LIMIT - 200:  # no room to show a command whole: not offered here
        offered = [o for o in offered if not o.command]
        body = "\n\n".join([*head, *_options(req.options, offered, req.incident_id)])
    if req.evidence:
        room = LIMIT - len(body) - len("\n\nEvidence:\n")
        if room > len(pointer(req.incident_id)) + 40:
            evidence = cut(f"<pre>{esc(req.evidence)}</pre>", room, more=pointer(req.incident_id))
            body += f"\n\nEvidence:\n{evidence}"
    text = cut(body, more=pointer(req.incident_id))
    buttons = request_buttons(req, offered, RUN_COMMAND)
    return text, buttons


def _options(
    options: list[SkillOption], offered: list[SkillOption], incident_id: int | None = None
) -> list[str]:
    """The options as text: a skill's line; a command's, shown whole, or why it is not offered."""
    if not options:
        return []
    lines = []
    for o in options:
        line = f"• <b>{esc(o.name)}</b>: {esc(o.description)}"
        if o.command and o in offered:
            line += f"\nRuns exactly this (sha256 {short(o.digest)}):\n<pre>{esc(o.command)}</pre>"
        elif o.command and (odd := oddities(o.command)):
            line += f"\nNot offered: {esc('; '.join(odd))}."
        elif o.command:
            line += (
                "\nNot offered here: the command does not fit this message whole; "
                f"<code>guard incidents show {incident_id}</code> shows it, "
                f"<code>guard approve {incident_id}</code> runs it."
            )
        lines.append(line)
    return ["Candidate skills:\n" + "\n".join(lines)]


def render_closed(header: str, state: str, text: str) -> str:
    """The incident message once nobody needs to press anything: its buttons are gone."""
    label = STATE_LABEL.get(state, state)
    return cut(f"{header}\n\n<b>{esc(label)}</b>\n{esc(text)}")


def render_update(update: IncidentUpdate) -> str:
    """The outcome posted as a reply under the incident message."""
    label = STATE_LABEL.get(update.state, update.state)
    return cut(
        f"<b>{esc(label)}</b> · incident #{update.incident_id}\n{esc(update.text)}",
        more=pointer(update.incident_id),
    )


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
        return render_request(req, signal)

    def header(self, incident_id: int, title: str, severity: str, target: str, count: int) -> str:
        return incident_header(incident_id, title, severity, target, count)

    def closed(self, header: str, state: str, text: str) -> str:
        return render_closed(header, state, text)

    def update(self, update: IncidentUpdate) -> str:
        return render_update(update)

    def pointer(self, incident_id: int) -> str:
        return pointer(incident_id)

    def member_line(self, incident: Incident | None, incident_id: int) -> str:
        return member_line(incident, incident_id)

    def closed_line(self, incident: Incident | None, incident_id: int, closed: str) -> str:
        return closed_line(incident, incident_id, closed)

    def group(self, members: list[MessageGroupMember]) -> tuple[str, Buttons]:
        return render(members)
