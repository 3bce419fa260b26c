"""The authorisation gate: its policies and their order, the allowlist as its first policy, and
the command queue as the one place a human command enters (a refusal audited there, once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from guard.domain.exceptions import GuardError
from guard.incidents.commands import queue_command
from guard.incidents.gate import (
    Actor,
    Allowed,
    AllowlistPolicy,
    Gate,
    NotAuthorised,
    Refused,
    default_gate,
)
from guard.store.db import Database, open_database
from guard.store.models import AuditEntry, ConversationMessage, HumanCommand, Incident
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit

CHAT_USER = Actor("chat", "42")
STRANGER = Actor("chat", "7")
CLI = Actor("cli", "ann")


class Fixed:
    """A policy with one answer for everyone, recording what it was asked."""

    def __init__(self, decision: Allowed | Refused | None) -> None:
        self.decision = decision
        self.asked: list[tuple[Actor, str, int | None]] = []

    def decide(
        self, actor: Actor, verb: str, incident: Incident | None
    ) -> Allowed | Refused | None:
        self.asked.append((actor, verb, incident.id if incident else None))
        return self.decision


class RefuseCli:
    def decide(self, actor: Actor, verb: str, incident: Incident | None) -> Refused | None:
        return Refused("answers come from the chat only") if actor.channel == "cli" else None


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


@pytest.fixture
def incident_id(db: Database) -> int:
    with db.session() as s:
        return int(stored_incident(s, "awaiting_human").id)


def audit(db: Database, action: str) -> list[AuditEntry]:
    with db.session() as s:
        return list(
            s.exec(
                select(AuditEntry).where(AuditEntry.action == action).order_by(col(AuditEntry.seq))
            )
        )


def count(db: Database, table: Any) -> int:
    with db.session() as s:
        return len(s.exec(select(table)).all())


def test_the_actors_name_is_the_audit_string_of_today() -> None:
    assert Actor("telegram", "42").name == "telegram:42"
    assert Actor("cli", "ann").name == "cli:ann"


def test_the_allowlist_allows_its_ids_refuses_the_rest_and_trusts_the_cli() -> None:
    policy = AllowlistPolicy({"chat": {"42"}})
    assert policy.decide(CHAT_USER, "approve", None) == Allowed(by="allowlist")
    assert policy.decide(STRANGER, "approve", None) == Refused(
        "you are not on this Guard's allowlist"
    )
    assert isinstance(policy.decide(CLI, "deny", None), Allowed)
    assert policy.decide(Actor("web", "x"), "view", None) is None  # not its channel: no opinion


def test_an_empty_allowlist_allows_nobody_and_names_where_it_is_set() -> None:
    policy = AllowlistPolicy({"chat": set()}, sources={"chat": "chat.allowed_user_ids"})
    assert policy.decide(CHAT_USER, "view", None) == Refused(
        "no one is allowed yet (chat.allowed_user_ids is empty)"
    )


def test_the_first_opinion_decides_in_order() -> None:
    refuse, allow = Fixed(Refused("not on call")), Fixed(Allowed(by="second"))
    assert Gate([refuse, allow]).authorise(CHAT_USER, "approve", None) == Refused("not on call")
    assert allow.asked == []  # never asked: the first opinion decided
    assert Gate([allow, refuse]).authorise(CHAT_USER, "approve", None) == Allowed(by="second")


def test_no_opinion_passes_to_the_next_and_none_at_all_refuses() -> None:
    silent = Fixed(None)
    gate = Gate([silent, AllowlistPolicy({"chat": {"42"}})])
    assert gate.authorise(CHAT_USER, "reply", None) == Allowed(by="allowlist")
    assert silent.asked == [(CHAT_USER, "reply", None)]
    refused = Gate([silent]).authorise(CHAT_USER, "reply", None)
    assert refused == Refused("no policy allows chat:42 to reply")  # fails closed
    assert Gate([]).authorise(CLI, "approve", None) == Refused(
        "no policy allows cli:ann to approve"
    )


def test_the_queue_asks_the_gate_with_the_incident(db: Database, incident_id: int) -> None:
    asked = Fixed(Allowed(by="fixed"))
    queue_command(db, incident_id=incident_id, verb="deny", actor=CHAT_USER, gate=Gate([asked]))
    assert asked.asked == [(CHAT_USER, "deny", incident_id)]
    (entry,) = audit(db, "human.deny")
    assert entry.actor == "chat:42" and entry.data["allowed"] == "fixed"


def test_a_refusal_is_audited_once_with_its_reason_and_nothing_is_written(
    db: Database, incident_id: int
) -> None:
    ran: list[object] = []
    with pytest.raises(NotAuthorised) as refused:
        queue_command(
            db,
            incident_id=incident_id,
            verb="reply",
            actor=STRANGER,
            gate=default_gate({"chat": {"42"}}),
            fix="rm -rf /",
            also=ran.append,
        )
    assert isinstance(refused.value, GuardError)
    assert str(refused.value) == "you are not on this Guard's allowlist"
    (entry,) = audit(db, "human.refused")
    assert (entry.actor, entry.subject) == ("chat:7", f"incident:{incident_id}")
    assert entry.data == {
        "verb": "reply",
        "reason": "you are not on this Guard's allowlist",
        "channel": "chat",
    }
    assert ran == []  # decided before anything else is written
    assert count(db, HumanCommand) == 0 and count(db, ConversationMessage) == 0
    assert audit(db, "human.reply") == []


def test_an_unknown_incident_is_refused_before_it_is_looked_for(db: Database) -> None:
    with pytest.raises(NotAuthorised):  # a refused actor learns nothing about incident ids
        queue_command(
            db, incident_id=999, verb="deny", actor=STRANGER, gate=default_gate({"chat": {"42"}})
        )


def test_the_cli_is_allowed_by_default_and_refused_when_a_policy_says_so(
    db: Database, incident_id: int
) -> None:
    cmd = queue_command(
        db, incident_id=incident_id, verb="approve", actor=CLI, gate=default_gate({})
    )
    assert (cmd.actor, cmd.channel) == ("cli:ann", "cli")
    (entry,) = audit(db, "human.approve")
    assert entry.actor == "cli:ann" and entry.data["allowed"] == "trusted channel cli"
    gate = Gate([RefuseCli(), *default_gate({}).policies])
    with pytest.raises(NotAuthorised, match="answers come from the chat only"):
        queue_command(db, incident_id=incident_id, verb="approve", actor=CLI, gate=gate)
    assert [e.data["reason"] for e in audit(db, "human.refused")] == [
        "answers come from the chat only"
    ]
    assert count(db, HumanCommand) == 1
