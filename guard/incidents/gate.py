"""Who may do what: one gate every human command passes, whichever channel it came from.

``Gate.authorise(actor, verb, incident)`` asks its policies in order; the first that has an
opinion (``Allowed`` or ``Refused``) decides, and when none has one the gate refuses: Guard fails
closed. A policy is any object with ``decide``; a role model, an on-call rota or a per-incident
rule is one more policy put before the allowlist, nothing else changes.

Where the gate is asked: ``queue_command`` asks it inside the transaction that would queue the
command (the one place every human command enters) and audits a refusal there, once. A channel
may also ask it at its front door (to refuse a stranger before anything else is read, and to
keep a stranger's flood to one audit row a window); what it refuses there never reaches the
queue, so a refusal is still audited once.

Verbs: the commands on an incident (``approve``, ``deny``, ``reply``, ``mute``), plus what a
channel offers besides: ``unmute`` and ``view`` (status, lists, reports, help). A press on a
button whose approval is unknown is asked as ``approve`` with no incident.

Policies take plain data from the wiring layer (ids per channel, which channels are trusted),
never the settings: this layer knows no channel by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlmodel import Session

from guard.domain.exceptions import GuardError
from guard.store import audit
from guard.store.models import Incident

VIEW = "view"
UNMUTE = "unmute"


@dataclass(frozen=True)
class Actor:
    """Who asks: a channel and the id that channel knows them by."""

    channel: str  # "cli", "demo", a chat channel's name, later "web", "mcp"
    id: str  # channel-local: a chat user id as text, the unix user name for the CLI

    @property
    def name(self) -> str:
        """What the audit log, the command queue and the conversation record as the actor."""
        return f"{self.channel}:{self.id}"


@dataclass(frozen=True)
class Allowed:
    by: str = ""  # which policy allowed it (recorded with the command's audit entry)


@dataclass(frozen=True)
class Refused:
    reason: str  # what the actor is told, and what the audit entry says


Decision = Allowed | Refused


class NotAuthorised(GuardError):
    """The gate refused a human command; the message is the refusal's reason."""


class Policy(Protocol):
    def decide(self, actor: Actor, verb: str, incident: Incident | None) -> Decision | None:
        """Allow, refuse, or ``None``: no opinion (the next policy decides)."""
        ...


class Gate:
    """The policies, in order: the first opinion decides; no opinion at all refuses."""

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.policies = tuple(policies)

    def authorise(self, actor: Actor, verb: str, incident: Incident | None) -> Decision:
        for policy in self.policies:
            decision = policy.decide(actor, verb, incident)
            if decision is not None:
                return decision
        return Refused(f"no policy allows {actor.name} to {verb}")


class AllowlistPolicy:
    """Today's rule. An actor of a listed channel is allowed iff its id is on that channel's
    list (an empty list allows nobody); an actor of a trusted channel is allowed (shell access
    to the box is the trust boundary of the CLI); any other channel: no opinion.

    ``sources`` names, per channel, where its list is configured (said when it is empty)."""

    def __init__(
        self,
        allowed_ids: Mapping[str, Iterable[str]],
        *,
        trusted: Iterable[str] = ("cli",),
        sources: Mapping[str, str] | None = None,
    ) -> None:
        self.allowed = {channel: frozenset(ids) for channel, ids in allowed_ids.items()}
        self.trusted = frozenset(trusted)
        self.sources = dict(sources or {})

    def decide(self, actor: Actor, verb: str, incident: Incident | None) -> Decision | None:
        if actor.channel in self.trusted:
            return Allowed(by=f"trusted channel {actor.channel}")
        ids = self.allowed.get(actor.channel)
        if ids is None:
            return None
        if actor.id in ids:
            return Allowed(by="allowlist")
        if not ids:
            where = self.sources.get(actor.channel, f"the {actor.channel} allowlist")
            return Refused(f"no one is allowed yet ({where} is empty)")
        return Refused("you are not on this Guard's allowlist")


def default_gate(
    allowed_ids: Mapping[str, Iterable[str]],
    *,
    trusted: Iterable[str] = ("cli",),
    sources: Mapping[str, str] | None = None,
) -> Gate:
    """The gate Guard runs with: the allowlist alone."""
    return Gate([AllowlistPolicy(allowed_ids, trusted=trusted, sources=sources)])


def authorise_in(
    session: Session,
    gate: Gate,
    actor: Actor,
    verb: str,
    incident_id: int | None,
    incident: Incident | None,
    *,
    subject: str = "",
) -> Decision:
    """``gate.authorise`` inside the transaction that would act: a refusal is audited there,
    once (``human.refused``, about ``subject``, default the incident), and the caller writes
    nothing else."""
    decision = gate.authorise(actor, verb, incident)
    if isinstance(decision, Refused):
        audit.append(
            session,
            actor=actor.name,
            action="human.refused",
            subject=subject or f"incident:{incident_id}",
            data={"verb": verb, "reason": decision.reason, "channel": actor.channel},
        )
    return decision
