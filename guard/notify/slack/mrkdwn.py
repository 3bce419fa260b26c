"""Rendering for Slack: mrkdwn, everything from logs escaped (``&``, ``<``, ``>``: Slack's only
three), cut under the message's room, and the same content as the other chat channels' messages: the
evidence, each proposed command shown whole in a code block with its digest, and a button only
for a command shown whole (one press never runs unseen text).

A command that would break out of its code block (it holds three backticks) is not shown whole
here, so it gets no button, as an odd command gets none anywhere. The channel lays the text out
as Block Kit sections (``blocks``).

Tested by tests/notify/test_slack_channel.py.
"""

from __future__ import annotations

import html
import re

from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.channel import Buttons
from guard.notify.labels import STATE_LABEL, request_buttons
from guard.util.commandtext import oddities, short
from guard.util.textsafe import printable

RUN_COMMAND = "▶ Run proposal"
LIMIT = 12000  # four sections of 3,000 characters: Slack's 50 blocks leave room for buttons
FENCE = "```"
QUOTE = "'"
QUOTES = QUOTE * 3


def esc(text: object) -> str:
    """``text`` for mrkdwn: control characters gone, ``&``, ``<``, ``>`` as entities."""
    return printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plain(chat_html: str) -> str:
    """Text rendered as chat HTML (the daily report's template) without its tags."""
    return html.unescape(re.sub(r"</?[a-z][^>]*>", "", chat_html))


def pre(text: object) -> str:
    """``text`` as a code block (a fence inside it would end the block: shown as three quotes)."""
    return FENCE + esc(text).replace(FENCE, QUOTES) + FENCE


def inline(text: object) -> str:
    """``text`` as inline code (a backtick inside it would end it: shown as a quote)."""
    return "`" + esc(text).replace("`", QUOTE) + "`"


def cut(text: str, limit: int = LIMIT, more: str = "") -> str:
    """``text`` (already mrkdwn) cut to at most ``limit`` characters, on a line if one is near,
    never inside an entity, a code block closed again if the cut falls in one."""
    if len(text) <= limit:
        return text
    tail = "\n…\n" + more
    head = text[: limit - len(tail) - len(FENCE)]
    newline = head.rfind("\n")
    if newline > len(head) * 0.8:
        head = head[:newline]
    amp = head.rfind("&")
    if amp != -1 and ";" not in head[amp:]:
        head = head[:amp]
    if head.count(FENCE) % 2:
        head += FENCE
    return head + tail


def pointer(incident_id: int) -> str:
    return f"Full text: `guard incidents show {incident_id}`"


def header(incident_id: int, title: str, severity: str, target: str, count: int) -> str:
    return (
        f"*Incident #{incident_id}* [{esc(severity)}]: {esc(title)}\n"
        f"Target: `{esc(target)}` · seen {count} times"
    )


def shown_whole(option: SkillOption) -> bool:
    """Whether the option's command can be shown exactly as it runs."""
    return bool(option.command) and not oddities(option.command) and FENCE not in option.command


def _options(options: list[SkillOption], offered: list[SkillOption], incident_id: int) -> str:
    lines = []
    for o in options:
        line = f"• *{esc(o.name)}*: {esc(o.description)}"
        if o.command and o in offered:
            line += f"\nRuns exactly this (sha256 {short(o.digest)}):\n{pre(o.command)}"
        elif o.command and (odd := oddities(o.command) or ["it holds a code fence (```)"]):
            line += f"\nNot offered: {esc('; '.join(odd))}."
        lines.append(line)
    return "Candidate skills:\n" + "\n".join(lines)


def request(req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
    """The incident message and its buttons (``signal``: the latest line that fired); the
    evidence is cut first to leave the commands room."""
    head = [header(req.incident_id, req.title, req.severity, req.target, req.count)]
    if signal:
        head.append(pre(signal[:1000]))
    head.append(esc(req.question))
    if req.url:
        head.append(f"Open: {esc(req.url)}")
    offered = [o for o in req.options if not o.command or shown_whole(o)]
    if req.options:
        body = "\n\n".join([*head, _options(req.options, offered, req.incident_id)])
        if len(body) > LIMIT - 200:  # no room to show a command whole: not offered here
            offered = [o for o in offered if not o.command]
            head.append(
                "Commands too long for this message: "
                f"`guard incidents show {req.incident_id}` shows them."
            )
            body = "\n\n".join([*head, _options(req.options, offered, req.incident_id)])
    else:
        body = "\n\n".join(head)
    if req.evidence:
        room = LIMIT - len(body) - len("\n\nEvidence:\n")
        if room > len(pointer(req.incident_id)) + 40:
            body += "\n\nEvidence:\n" + cut(pre(req.evidence), room, pointer(req.incident_id))
    buttons = request_buttons(req, offered, RUN_COMMAND)
    return cut(body, more=pointer(req.incident_id)), buttons


def closed(head: str, state: str, text: str) -> str:
    return cut(f"{head}\n\n*{esc(STATE_LABEL.get(state, state))}*\n{esc(text)}")


def update(u: IncidentUpdate) -> str:
    label = STATE_LABEL.get(u.state, u.state)
    return cut(
        f"*{esc(label)}* · incident #{u.incident_id}\n{esc(u.text)}", more=pointer(u.incident_id)
    )
