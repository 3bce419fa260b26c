"""Plain-text rendering (``Markup``) for channels that show text as it is: no markup, control
characters gone, cut under the channel's limit on a line boundary."""

from __future__ import annotations

from guard.notify.base import HumanRequest, IncidentUpdate
from guard.notify.channel import Buttons
from guard.notify.outbox import grouping
from guard.store.models import Incident, MessageGroupMember
from guard.util.textsafe import printable

STATE_LABEL = {
    "resolved": "Resolved",
    "escalated": "Escalated",
    "expired": "Approvals expired",
    "awaiting_human": "Waiting for a human",
    "muted": "Muted",
    "remediating": "Remediating",
}


class PlainMarkup:
    run_command = "Run proposal"

    def __init__(self, limit: int = 4000) -> None:
        self.limit = limit

    def escape(self, text: object) -> str:
        return printable(text)

    def cut(self, text: str, limit: int | None = None, more: str = "") -> str:
        limit = limit or self.limit
        if len(text) <= limit:
            return text
        tail = "\n…\n" + more
        head = text[: limit - len(tail)]
        newline = head.rfind("\n")
        return (head[:newline] if newline > len(head) * 0.8 else head) + tail

    def code(self, text: object) -> str:
        return f"`{printable(text)}`"

    def bold(self, text: object) -> str:
        return printable(text)

    def pointer(self, incident_id: int) -> str:
        return f"Full text: guard incidents show {incident_id}"

    def header(self, incident_id: int, title: str, severity: str, target: str, count: int) -> str:
        e = self.escape
        return (
            f"Incident #{incident_id} [{e(severity)}]: {e(title)}\n"
            f"Target: {e(target)} · seen {count} times"
        )

    def request(self, req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
        e = self.escape
        lines = [self.header(req.incident_id, req.title, req.severity, req.target, req.count)]
        if signal:
            lines.append(e(signal[:1000]))
        lines.append(e(req.question))
        buttons: Buttons = []
        for o in req.options:
            lines.append(f"- {e(o.name)}: {e(o.description)}")
            if o.command:
                lines.append(f"  runs exactly: {e(o.command)}")
            label = self.run_command if o.command else f"Run {o.name}"[:60]
            buttons.append([(label, o.approval_id)])
        if req.evidence:
            lines.append("Evidence:\n" + e(req.evidence))
        row = [("Send a fix", f"fix:{req.incident_id}")]
        if req.deny_id:
            row.append(("Deny", req.deny_id))
        if req.mute_id:
            row.append(("Mute 1h", req.mute_id))
        buttons.append(row)
        if req.ack_id:
            buttons.append([("Acknowledge", req.ack_id)])
        return self.cut("\n\n".join(lines), more=self.pointer(req.incident_id)), buttons

    def closed(self, header: str, state: str, text: str) -> str:
        return self.cut(f"{header}\n\n{STATE_LABEL.get(state, state)}\n{self.escape(text)}")

    def update(self, update: IncidentUpdate) -> str:
        label = STATE_LABEL.get(update.state, update.state)
        return self.cut(
            f"{label} · incident #{update.incident_id}\n{self.escape(update.text)}",
            more=self.pointer(update.incident_id),
        )

    def member_line(self, incident: Incident | None, incident_id: int) -> str:
        if incident is None:
            return f"#{incident_id}"
        return self.cut(
            f"#{incident_id} [{self.escape(incident.severity)}] {self.escape(incident.title)} "
            f"· seen {incident.count} times",
            300,
        )

    def closed_line(self, incident: Incident | None, incident_id: int, closed: str) -> str:
        _, _, outcome = closed.partition("\n\n")
        outcome = " · ".join(part for part in outcome.splitlines() if part.strip())
        title = self.escape(incident.title) if incident is not None else ""
        return self.cut(f"#{incident_id} (closed) {title}: {outcome or 'Resolved'}", 300)

    def group(self, members: list[MessageGroupMember]) -> tuple[str, Buttons]:
        live = sum(1 for m in members if m.live)
        head = f"{len(members)} incidents opened together" + (
            f"; {live} still need a human." if live else "."
        )
        text = self.cut("\n\n".join([head, *(m.text for m in members)]))
        return text, grouping.live_buttons(members)
