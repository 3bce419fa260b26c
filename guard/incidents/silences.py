"""Silences, as Alertmanager has them: matchers on what an incident is, with an expiry.

A matcher is ``NAME=VALUE``, ``NAME!=VALUE``, ``NAME=~REGEX`` or ``NAME!~REGEX`` (the regex
anchored, as Alertmanager's). ``NAME`` is ``service``, ``kind``, ``target``, ``source``,
``monitor`` or ``severity``; any other name is a label of the incident (an intake alert's
labels; ``labels.NAME`` says so outright). All matchers of a silence must match.

What a silence does (the agent applies it as it takes an incident, opened or reopened, in
``guard.agent.orchestration``): the incident is recorded as usual, then muted until the silence
expires, with ``details.silenced`` naming the silence; so nobody is asked and no pager is
triggered, and a later signal on it after the expiry opens it again (it is asked then). A
question already asked is not taken back: ``guard mute ID`` does that.

Creating and expiring a silence pass the authorisation gate (verbs ``silence`` and
``unsilence``, operator) in the transaction that writes them, and are audited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session

from guard.exceptions import GuardError
from guard.incidents.authz import (
    Actor,
    Allowed,
    Gate,
    NotAuthorised,
    Refused,
    authorise_in,
)
from guard.records import utcnow
from guard.store import audit
from guard.store.db import Database
from guard.store.models import Incident
from guard.store.silences import Silence, live, recent

FIELDS = ("service", "kind", "target", "source", "monitor", "severity")
OPS = ("=~", "!~", "!=", "=")  # longest first: `a!=b` is not `a!` = `b`
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


class BadMatcher(GuardError):
    """A matcher that does not parse; the message names it and shows the form."""


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.name}{self.op}{self.value}"

    def matches(self, incident: Incident) -> bool:
        have = value_of(incident, self.name)
        if self.op in ("=", "!="):
            equal = have == self.value
            return equal if self.op == "=" else not equal
        found = have is not None and re.fullmatch(self.value, have) is not None
        return found if self.op == "=~" else not found


def parse(text: str) -> Matcher:
    """One matcher from ``NAME=VALUE`` (or ``!=``, ``=~``, ``!~``)."""
    for op in OPS:
        name, sep, value = text.partition(op)
        if sep and _NAME.fullmatch(name.strip()):
            value = value.strip().strip('"')
            if op in ("=~", "!~"):
                try:
                    re.compile(value)
                except re.error as exc:
                    raise BadMatcher(f"matcher {text!r}: invalid regex: {exc}") from None
            return Matcher(name.strip(), op, value)
    raise BadMatcher(
        f"matcher {text!r}: use NAME=VALUE, NAME!=VALUE, NAME=~REGEX or NAME!~REGEX, with "
        f"NAME one of {', '.join(FIELDS)} or a label (e.g. service=api kind=log_match)"
    )


def value_of(incident: Incident, name: str) -> str | None:
    """What ``incident`` says for a matcher's ``name`` (None: it says nothing)."""
    details = incident.details or {}
    if name in FIELDS:
        raw: Any = {
            "service": details.get("service"),
            "kind": incident.kind,
            "target": incident.target,
            "source": incident.source,
            "monitor": incident.monitor_id,
            "severity": incident.severity,
        }[name]
        return None if raw is None else str(raw)
    labels = details.get("labels")
    if not isinstance(labels, dict) and isinstance(details.get("alert"), dict):
        labels = details["alert"].get("labels")
    label = (labels or {}).get(name.removeprefix("labels.")) if isinstance(labels, dict) else None
    return None if label is None else str(label)


def matchers_of(silence: Silence) -> list[Matcher]:
    return [Matcher(m["name"], m["op"], m["value"]) for m in silence.matchers]


def describe(silence: Silence) -> str:
    return " ".join(str(m) for m in matchers_of(silence))


def matching(session: Session, incident: Incident, at: datetime | None = None) -> Silence | None:
    """The live silence that matches ``incident`` (the one lasting longest), or None."""
    found = [s for s in live(session, at) if all(m.matches(incident) for m in matchers_of(s))]
    return max(found, key=lambda s: s.expires_at) if found else None


def create(
    db: Database,
    texts: list[str],
    seconds: float,
    actor: Actor,
    gate: Gate,
    *,
    comment: str = "",
) -> Silence:
    """A silence of the matchers ``texts`` for ``seconds`` from now (raises ``BadMatcher``,
    ``NotAuthorised``)."""
    matchers = [parse(t) for t in texts]
    if not matchers:
        raise BadMatcher("a silence needs at least one matcher, e.g. service=api kind=log_match")
    if seconds <= 0:
        raise BadMatcher("--for: a silence needs a duration, e.g. --for 2h")
    with db.session() as session:
        decision = authorise_in(session, gate, actor, "silence", None, None, subject="silences")
        if isinstance(decision, Allowed):
            return _write(session, matchers, seconds, actor, decision, comment)
    assert isinstance(decision, Refused)
    raise NotAuthorised(decision.reason)


def _write(
    session: Session,
    matchers: list[Matcher],
    seconds: float,
    actor: Actor,
    allowed: Allowed,
    comment: str,
) -> Silence:
    row = Silence(
        matchers=[{"name": m.name, "op": m.op, "value": m.value} for m in matchers],
        expires_at=utcnow() + timedelta(seconds=seconds),
        by=actor.name,
        comment=comment,
    )
    session.add(row)
    session.flush()
    audit.append(
        session,
        actor=actor.name,
        action="human.silence",
        subject=f"silence:{row.id}",
        data={
            "matchers": [str(m) for m in matchers],
            "expires_at": row.expires_at.isoformat(),
            "channel": actor.channel,
            "allowed": allowed.by,
        },
    )
    return row


def expire(db: Database, silence_id: int, actor: Actor, gate: Gate) -> Silence:
    """End silence ``silence_id`` now (raises ``GuardError`` if there is none live)."""
    with db.session() as session:
        decision = authorise_in(
            session, gate, actor, "unsilence", None, None, subject=f"silence:{silence_id}"
        )
        if isinstance(decision, Allowed):
            row = session.get(Silence, silence_id)
            if row is None or row.cleared_at is not None or row.expires_at <= utcnow():
                raise GuardError(f"no live silence {silence_id} (see `guard silences`)")
            row.cleared_at = utcnow()
            session.add(row)
            audit.append(
                session,
                actor=actor.name,
                action="human.unsilence",
                subject=f"silence:{silence_id}",
                data={"matchers": row.matchers, "channel": actor.channel, "allowed": decision.by},
            )
            return row
    assert isinstance(decision, Refused)
    raise NotAuthorised(decision.reason)


def listed(db: Database, *, everything: bool = False) -> list[Silence]:
    """The live silences (``everything``: the newest ones, ended too)."""
    with db.session() as session:
        return recent(session) if everything else live(session)
