"""The console's rendering (``ConsoleMarkup``): what operators read in Guard's log, each
question with the exact ``guard approve|deny|reply`` commands that answer it. A grouped message
has a line per incident with its commands. Tested by tests/notify/test_console_channel.py."""

from __future__ import annotations

from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.channel import Buttons
from guard.notify.outbox import grouping
from guard.notify.plain import PlainMarkup
from guard.store.models import Incident, MessageGroupMember
from guard.util.commandtext import oddities, short

WHOLE = 1_000_000  # the log shows a question whole: a command is never cut


class ConsoleMarkup(PlainMarkup):
    def __init__(self, public_url: str | None = None) -> None:
        super().__init__(WHOLE)
        self.public_url = public_url or ""

    def request(self, req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
        _, buttons = super().request(req, signal)  # kept for presses and the outbox's grouping
        e = self.escape
        lines = [
            f"Incident #{req.incident_id} needs a human: {e(req.title)} "
            f"[{e(req.severity)}] x{req.count}",
            f"  {e(req.question)}",
        ]
        if req.evidence:
            lines.append("  evidence:")
            lines += [f"    {e(line)}" for line in req.evidence.splitlines()[:40]]
        for opt in req.options:
            lines += option_lines(req.incident_id, opt)
        lines.append(f"  fix:      guard reply {req.incident_id} -- COMMAND  ({e(req.fix_hint)})")
        lines.append(f"  deny:     guard deny {req.incident_id}")
        if req.url:
            lines.append(f"  page:     {req.url}")
        if req.ack_id:
            lines.append(f"  ack:      guard ack {req.incident_id}  (stops the escalation)")
        return "\n".join(lines), buttons

    def update(self, update: IncidentUpdate) -> str:
        e = self.escape
        return f"Incident #{update.incident_id} {update.state}: {e(update.title)}. {e(update.text)}"

    def member_line(self, incident: Incident | None, incident_id: int) -> str:
        if incident is None:
            return f"  #{incident_id}"
        e = self.escape
        return f"  #{incident_id} {e(incident.title)} [{e(incident.severity)}] x{incident.count}"

    def closed_line(self, incident: Incident | None, incident_id: int, closed: str) -> str:
        return "  " + super().closed_line(incident, incident_id, closed)

    def group(self, members: list[MessageGroupMember]) -> tuple[str, Buttons]:
        live = sum(1 for m in members if m.live)
        if live == len(members):
            lines = [f"{len(members)} incidents need a human (opened together):"]
        else:
            lines = [f"{len(members)} incidents opened together; {live} still need a human:"]
        for m in members:
            lines.append(m.text)
            if m.live:
                lines += self._commands(m)
        return "\n".join(lines), grouping.live_buttons(members)

    def _commands(self, m: MessageGroupMember) -> list[str]:
        """An open incident's commands in a grouped message (its skills from its buttons)."""
        i = m.incident_id
        prefix = f"#{i} Run "
        lines = [
            f"      approve:  guard approve {i} --skill {str(label).removeprefix(prefix)}"
            for row in m.buttons
            for label, _ in row
            if str(label).startswith(prefix) and str(label) != f"#{i} {self.run_command}"
        ]
        lines.append(f"      fix:      guard reply {i} -- COMMAND   |   deny: guard deny {i}")
        if self.public_url:
            lines.append(f"      page:     {self.public_url}/incidents/{i}")
        return lines


def option_lines(incident_id: int, opt: SkillOption) -> list[str]:
    """How to approve one option; a command is shown whole (``repr`` if it is odd, and then
    not offered), with the digest ``guard approve --digest`` binds the approval to."""
    if not opt.command:
        return [f"  approve:  guard approve {incident_id} --skill {opt.name}   ({opt.description})"]
    if odd := oddities(opt.command):
        return [f"  {opt.name}: not offered ({'; '.join(odd)}): {opt.command!r}"]
    return [
        f"  approve:  guard approve {incident_id} --skill {opt.name} --digest {short(opt.digest)}"
        f"   ({opt.description})",
        "  runs exactly:",
        *(f"    | {line}" for line in opt.command.split("\n")),
    ]
