"""The four roles, each including the one before it, and the role each verb needs.

- ``viewer``: reads incidents, skills, monitors, reports, the audit head (``view``);
- ``operator``: acknowledges, mutes and unmutes, resolves (an incident a person knows is over:
  it changes nothing on the systems, and the fault firing again reopens it), silences, asks for
  a report, starts a model diagnosis, splits a wrongly correlated signal off an incident, runs a
  command in an incident's diagnostics sandbox or a read-only probe, and proposes a fix (MCP);
- ``approver``: approves, denies, sends a fix;
- ``admin``: changes a skill's trust, manages tokens.

A verb this table does not know needs ``admin``: an entry that forgets to name its verb here
fails closed.
"""

from __future__ import annotations

from enum import IntEnum


class Role(IntEnum):
    viewer = 1
    operator = 2
    approver = 3
    admin = 4

    @classmethod
    def parse(cls, text: str) -> Role:
        """The role named ``text``; ``ValueError`` naming the four otherwise."""
        try:
            return cls[text.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown role {text!r}: one of {', '.join(ROLE_NAMES)}") from None


ROLE_NAMES = tuple(role.name for role in Role)

NEEDS: dict[str, Role] = {
    "view": Role.viewer,
    "ack": Role.operator,
    "mute": Role.operator,
    "unmute": Role.operator,
    "resolve": Role.operator,
    "silence": Role.operator,
    "unsilence": Role.operator,
    "report": Role.operator,
    "diagnose": Role.operator,
    "split": Role.operator,
    "sandbox_run": Role.operator,
    "probe": Role.operator,
    "propose": Role.operator,
    "approve": Role.approver,
    "deny": Role.approver,
    "reply": Role.approver,
    "fix": Role.approver,
    "trust": Role.admin,
    "distrust": Role.admin,
    "quarantine": Role.admin,
    "token": Role.admin,
}


def needed(verb: str) -> Role:
    """The least role that may ``verb`` (``admin`` for a verb not in ``NEEDS``)."""
    return NEEDS.get(verb, Role.admin)
