"""Silences, as Alertmanager has them: matchers on what an incident is, with an expiry.

A matcher is ``NAME=VALUE``, ``NAME!=VALUE``, ``NAME=~REGEX`` or ``NAME!~REGEX`` (the regex
anchored, as Alertmanager's). ``NAME`` is ``service``, ``kind``, ``target``, ``source``,
``monitor`` or ``severity``; any other name is a label of the incident (an intake alert's
labels; ``labels.NAME`` says so outright). All matchers of a silence must match.

What a silence does (the agent applies it as it takes an incident, opened or reopened, in
``guard.agent.orchestration``): the incident is recorded as usual, then muted until the silence
expires, with ``details.silenced`` naming the silence; so nobody is asked and no pager is
triggered, and a later signal on it after the expiry opens it again (it is asked then). As an
Alertmanager silence hushes alerts already firing, a new silence also mutes the matching
incidents already asking a human (``awaiting_human``, ``escalated``), in the transaction that
writes it: their pages are resolved (the page worker's sweep) and their escalation stops.

Creating and expiring a silence pass the authorisation gate (verbs ``silence`` and
``unsilence``, operator) in the transaction that writes them, and are audited. The CLI, the
console and MCP all come here, so each validates and answers in the same words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from guard.domain.durations import format_duration, parse_duration
from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.incidents.gate import (
    Actor,
    Allowed,
    Gate,
    NotAuthorised,
    Refused,
    authorise_in,
)
from guard.incidents.lifecycle import transition
from guard.store import audit
from guard.store.db import Database
from guard.store.models import Incident, IncidentState
from guard.store.silences import Silence, live, recent

FIELDS = ("service", "kind", "target", "source", "monitor", "severity")
OPS = ("=~", "!~", "!=", "=")  # longest first: `a!=b` is not `a!` = `b`
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
ASKING = (IncidentState.awaiting_human, IncidentState.escalated)  # a new silence mutes these
COMMENT_CHARS = 500


class BadMatcher(GuardError):
    """A matcher (or a duration) that does not parse; the message names it and shows the
    form."""


@dataclass(frozen=True)
class Made:
    """A silence just written, how long it lasts, and the incidents already asked that it
    muted."""

    silence: Silence
    seconds: float
    hushed: tuple[int, ...] = ()

    def __str__(self) -> str:
        """What the CLI, MCP and the console answer."""
        s = self.silence
        text = (
            f"silence #{s.id} ({describe(s)}) until {s.expires_at:%Y-%m-%d %H:%M:%S} UTC "
            f"({format_duration(self.seconds)}): matching incidents are recorded, nobody is "
            f"asked or paged (`guard silences --expire {s.id}`)"
        )
        if self.hushed:
            ids = ", ".join(f"#{i}" for i in self.hushed)
            many = (
                "incidents already asked are"
                if len(self.hushed) > 1
                else ("incident already asked is")
            )
            text += f"; {len(self.hushed)} {many} silenced too ({ids})"
        return text


def seconds_of(text: str, name: str = "--for") -> float:
    """How long a silence (or a mute) of ``text`` lasts, in seconds (``BadMatcher`` naming
    the option ``name`` otherwise)."""
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise BadMatcher(f"{name}: {exc}") from None
    if seconds <= 0:
        raise BadMatcher(f"{name}: give a duration longer than 0 (e.g. 1h)")
    return seconds


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


def hushing(silence: Silence) -> tuple[str, dict[str, Any]]:
    """Why an incident ``silence`` matches is muted (its timeline's words) and the details
    that say so; the agent's and ``create``'s are the same."""
    until = silence.expires_at
    reason = (
        f"silenced by silence #{silence.id} ({describe(silence)}) of {silence.by} until "
        f"{until:%Y-%m-%d %H:%M:%S} UTC"
    )
    details = {
        "muted_until": until.isoformat(),
        "silenced": {"silence": silence.id, "until": until.isoformat()},
    }
    return reason, details


def create(
    db: Database,
    texts: list[str],
    seconds: float,
    actor: Actor,
    gate: Gate,
    *,
    comment: str = "",
) -> Made:
    """A silence of the matchers ``texts`` for ``seconds`` from now, which also mutes the
    matching incidents already asking a human (raises ``BadMatcher``, ``NotAuthorised``)."""
    matchers = [parse(t) for t in texts]
    if not matchers:
        raise BadMatcher("a silence needs at least one matcher, e.g. service=api kind=log_match")
    if seconds <= 0:
        raise BadMatcher("--for: a silence needs a duration, e.g. --for 2h")
    with db.session() as session:
        decision = authorise_in(session, gate, actor, "silence", None, None, subject="silences")
        if isinstance(decision, Allowed):
            row = _write(session, matchers, seconds, actor, decision, comment[:COMMENT_CHARS])
            return Made(row, seconds, _hush_asked(session, row, actor))
    assert isinstance(decision, Refused)
    raise NotAuthorised(decision.reason)


def _hush_asked(session: Session, silence: Silence, actor: Actor) -> tuple[int, ...]:
    """Mute the incidents asking a human that ``silence`` matches (the ids, oldest first)."""
    asking = session.exec(
        select(Incident).where(col(Incident.state).in_(ASKING)).order_by(col(Incident.id))
    ).all()
    reason, details = hushing(silence)
    hushed = []
    for inc in asking:
        if all(m.matches(inc) for m in matchers_of(silence)):
            transition(session, inc, IncidentState.muted, actor=actor.name, reason=reason)
            inc.details = {**inc.details, **details}
            session.add(inc)
            hushed.append(int(inc.id or 0))
    return tuple(hushed)


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


def as_dict(silence: Silence) -> dict[str, Any]:
    """A silence as ``guard silences --json`` and MCP's ``silences`` give it."""
    now = utcnow()
    s = silence
    ended = s.cleared_at or (s.expires_at if s.expires_at <= now else None)
    return {
        "id": s.id,
        "matchers": describe(s),
        "expires_at": s.expires_at.isoformat(),
        "by": s.by,
        "comment": s.comment,
        "created_at": s.created_at.isoformat(),
        "ended_at": ended.isoformat() if ended else None,
    }


def expired(silence: Silence) -> str:
    """What expiring ``silence`` answers."""
    return f"silence #{silence.id} ({describe(silence)}) expired"
