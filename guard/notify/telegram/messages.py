"""Rendering for Telegram: HTML parse mode, everything from logs escaped, cut under the limit.

Telegram refuses a message over 4096 characters (after entity parsing) and HTML with a stray
``<`` or ``&``, or with a tag left open. Text is escaped first and cut afterwards (``cut``), on a
line boundary, never inside a tag or an entity such as ``&amp;``, and with the tags still open
there closed again; a cut message says where the whole text is (``guard incidents show``).
Buttons are plain ``(label, callback_data)`` pairs here, so the outbox can store them as JSON;
callback data is the opaque approval id (or ``fix:ID`` for the "send a fix" prompt).
"""

from __future__ import annotations

import re
from html import escape

from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.labels import STATE_LABEL, request_buttons
from guard.util.commandtext import oddities, short
from guard.util.textsafe import printable

RUN_COMMAND = "▶ Run proposal"
"""The label of a button that runs a command its own message shows whole (never grouped)."""
LIMIT = 4096
CAPTION_LIMIT = 1024
Buttons = list[list[tuple[str, str]]]


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
