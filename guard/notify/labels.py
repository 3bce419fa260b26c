"""What the chat channels with emoji say the same way: an incident state's label, and the
buttons of an incident's question (a run button per offered option, then send a fix, deny and
mute, then acknowledge). Each channel's markup renders them (the chat HTML, Slack's mrkdwn).

Tested by tests/notify/test_slack_channel.py.
"""

from __future__ import annotations

from guard.notify.base import HumanRequest, SkillOption
from guard.notify.channel import Buttons

STATE_LABEL = {
    "resolved": "✅ Resolved",
    "escalated": "🚨 Escalated",
    "expired": "⌛ Approvals expired",
    "awaiting_human": "⏳ Waiting for a human",
    "muted": "🔕 Muted",
    "remediating": "🔧 Remediating",
}


def request_buttons(req: HumanRequest, offered: list[SkillOption], run_command: str) -> Buttons:
    """The question's buttons: ``run_command`` only on an option whose command is shown whole."""
    buttons: Buttons = [
        [(run_command if o.command else f"▶ Run {o.name}"[:60], o.approval_id)] for o in offered
    ]
    row = [("✍ Send a fix", f"fix:{req.incident_id}")]
    if req.deny_id:
        row.append(("✖ Deny", req.deny_id))
    if req.mute_id:
        row.append(("🔕 Mute 1h", req.mute_id))
    buttons.append(row)
    if req.ack_id:
        buttons.append([("✋ Acknowledge", req.ack_id)])
    return buttons
