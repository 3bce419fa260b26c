"""The Notifier port: how Guard talks to humans (the console, the chat channels, ...).

The agent loop calls a notifier when an incident needs a person (``ask``), when an incident
changes in a way a person should see (``update``: healed, escalated, expired), and for plain
text (reports, replies). A notifier never decides anything: answers come back through
``guard approve|deny|reply`` or a chat channel's runner, which hand them to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class SkillOption:
    """A candidate remedy a human may approve."""

    name: str
    description: str
    approval_id: str  # opaque, single-use id of the stored approval (fits a button's 64 bytes)
    command: str = ""
    """The exact command approving runs (a model's proposal): every surface shows it whole."""
    digest: str = ""
    """``commandtext.digest(command)``: the approval runs the command only while it matches."""


@dataclass(frozen=True)
class HumanRequest:
    """Everything a person needs to decide about one incident."""

    incident_id: int
    title: str
    severity: str
    target: str
    count: int
    evidence: str  # diagnosis output, already redacted
    options: list[SkillOption] = field(default_factory=list)
    deny_id: str = ""
    mute_id: str = ""
    ack_id: str = ""  # "Acknowledge" (stops escalation): only when escalation is configured
    question: str = "No trusted remedy is known. Approve one, or send a fix."
    url: str = ""  # the incident's console page (``public_url``), "" when none is configured
    # what a fix may be here: no shell command where no sandbox can run (actions/fixforms.py)
    fix_hint: str = "a shell command for the sandbox, or an action like docker.restart NAME"


@dataclass(frozen=True)
class IncidentUpdate:
    incident_id: int
    title: str
    state: str  # resolved, escalated, expired, ...
    text: str


@runtime_checkable
class Notifier(Protocol):
    async def ask(self, request: HumanRequest) -> None:
        """Ask a person about an incident (one message per incident, however big the storm)."""
        ...

    async def update(self, update: IncidentUpdate) -> None:
        """Tell people what became of an incident they were asked about."""
        ...

    async def send_text(self, text: str) -> None:
        """Send plain text (a report, a reply)."""
        ...

    async def flush(self) -> None:
        """Deliver at once whatever waits to be grouped (before Guard stops)."""
        ...


@runtime_checkable
class JoinAware(Protocol):
    """A notifier that acts when a signal joins an incident (``guard.triage.correlation``):
    the pagers page the routes the signal adds."""

    async def joined(self, incident_id: int) -> None:
        """A related signal joined the incident (its question, if asked, is out)."""
        ...


async def joined(notifier: Notifier, incident_id: int) -> None:
    """Tell ``notifier`` a signal joined the incident, if it cares."""
    if isinstance(notifier, JoinAware):
        await notifier.joined(incident_id)
