"""Keep a channel in step with the store, whoever changed it (one ``Sync`` per channel).

Every second:
- a live incident message (one with working buttons) whose question is over, because the
  incident moved on (healed, answered from the CLI, auto-resolved) or its approvals expired,
  is edited to say so, and its buttons go away;
- the outcome of a command sent through the channel that nobody else reports (a denied or
  muted incident, an approved skill that did not cure it, a fix that could not run) is posted
  in its thread.
  Healed incidents and learned fixes are reported by the agent through ``notifier.update``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from loguru import logger
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.incidents.approvals import ended_as
from guard.notify.channel import Markup
from guard.notify.outbox import grouping, queue
from guard.store.db import Database
from guard.store.models import (
    Approval,
    ChannelMessage,
    CommandStatus,
    HumanCommand,
    Incident,
    IncidentState,
    MessageGroupMember,
)
from guard.store.state import get_state, put_state

EVERY = 1.0
ASKING = frozenset({IncidentState.awaiting_human, IncidentState.escalated})
# a question: its own message (None: a line of a group's), the message or line, its approvals,
# and the id of the message it is shown in
Asked = tuple[
    "ChannelMessage | None", "ChannelMessage | MessageGroupMember", list[str], "int | None"
]


class Sync:
    """Closes a channel's finished questions in ``chat_id`` and reports the outcome of its
    commands; ``closed_text(incident_id, state, text)`` renders a closed question."""

    def __init__(
        self,
        db: Database,
        channel: str,
        chat_id: str,
        closed_text: Callable[[int, str, str], str],
        markup: Markup,
    ) -> None:
        self.db = db
        self.channel = channel
        self.chat_id = chat_id
        self.closed_text = closed_text
        self.markup = markup
        self.reported = f"{channel}:reported_command"

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.to_thread(self.once)
            except Exception as exc:
                logger.warning("{} sync failed: {}", self.channel, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), EVERY)

    def once(self) -> None:
        self.close_finished_questions()
        self.report_commands()

    def close_finished_questions(self) -> None:
        now = utcnow()
        # each closing edit names the message the sync saw over: the question's own, or the
        # group its line is in (never a newer question asked meanwhile: issue 44)
        work: list[tuple[ChannelMessage | None, int | None, str, int, str, str]] = []
        with self.db.session() as session:
            live = session.exec(
                select(ChannelMessage).where(
                    ChannelMessage.channel == self.channel,
                    col(ChannelMessage.live),
                    col(ChannelMessage.role).in_(("incident", "group")),
                )
            ).all()
            asked: list[Asked] = [
                (msg, msg, list(msg.approvals), msg.id) for msg in live if msg.role == "incident"
            ]
            for group in (m for m in live if m.role == "group"):
                for member in grouping.members_of(
                    session, self.channel, group.chat_id, group.message_id
                ):
                    if member.live:
                        asked.append((None, member, grouping.approvals(member.buttons), group.id))
            # two queries for all the questions, not two per question: this runs every second
            finished = Finished.of(session, [(m.incident_id, a) for _, m, a, _ in asked], now)
            for own, msg, approvals, shown_in in asked:
                over = finished.over(msg.incident_id, approvals)
                if over is None or msg.incident_id is None:
                    continue
                if own is None:  # a group's line
                    msg.live = False  # queued once: the edit below closes its line
                    session.add(msg)
                work.append((own, shown_in, msg.chat_id, msg.incident_id, *over))
        for own, shown_in, chat_id, incident_id, state, text in work:
            closed = self.closed_text(incident_id, state, text)
            # queued only if nobody closed it meanwhile (a press, the agent's own report)
            queue.close_question(
                self.db,
                self.channel,
                chat_id=chat_id,
                incident_id=incident_id,
                text=closed,
                only_message=own.id if own else None,
                message=shown_in,
            )

    def report_commands(self) -> None:
        with self.db.session() as session:
            last = int(get_state(session, self.reported).get("id", 0))
            rows = session.exec(
                select(HumanCommand)
                .where(HumanCommand.channel == self.channel, col(HumanCommand.id) > last)
                .order_by(col(HumanCommand.id))
            ).all()
            done = []
            for cmd in rows:
                if cmd.status not in (CommandStatus.done, CommandStatus.failed):
                    break
                done.append(cmd)
            if done:
                put_state(session, self.reported, {"id": done[-1].id})
            learned = {}
            for c in done:
                inc = session.get(Incident, c.incident_id) if c.verb == "reply" else None
                learned[c.id] = inc.details if inc is not None else {}
        for cmd in done:
            reported_by_agent = (cmd.verb == "approve" and cmd.status == "done") or (
                cmd.verb == "reply"
                and cmd.outcome == (learned.get(cmd.id) or {}).get("learned_message")
            )
            if reported_by_agent:
                continue
            esc, incident_id = self.markup.escape, cmd.incident_id
            for chat in queue.asked_in(self.db, self.channel, incident_id, self.chat_id):
                queue.enqueue(
                    self.db,
                    self.channel,
                    method="send",
                    chat_id=chat,
                    text=self.markup.cut(
                        f"Incident #{incident_id}, {esc(cmd.verb)} by "
                        f"{esc(cmd.actor)}: {esc(cmd.outcome)}",
                        more=self.markup.pointer(incident_id),
                    ),
                    incident_id=incident_id,
                    role="reply",
                    reply_to_incident=True,
                )


@dataclass(frozen=True)
class Finished:
    """The states of the incidents asked about, and which of their approvals still hold."""

    states: dict[int, str]
    valid: frozenset[str]
    ended: dict[str, str]  # approvals spent as their incident ended: the state it ended in
    busy: frozenset[int] = frozenset()  # incidents with a person's command queued or running

    @classmethod
    def of(
        cls, session: Session, asked: list[tuple[int | None, list[str]]], now: datetime
    ) -> Finished:
        ids = {i for i, _ in asked if i}
        codes = {a for _, approvals in asked for a in approvals}
        states = (
            dict(
                session.exec(
                    select(Incident.id, Incident.state).where(col(Incident.id).in_(ids))
                ).all()
            )
            if ids
            else {}
        )
        spent = (
            session.exec(
                select(Approval.id, Approval.used_at, Approval.used_by, Approval.expires_at).where(
                    col(Approval.id).in_(codes)
                )
            ).all()
            if codes
            else []
        )
        valid = frozenset(a for a, used, _, expires in spent if used is None and expires > now)
        ended = {a: why for a, _, by, _ in spent if (why := ended_as(by))}
        answered = len(valid) < len(spent)  # a press elsewhere: is its command still to run?
        busy = (
            frozenset(
                session.exec(
                    select(HumanCommand.incident_id).where(
                        col(HumanCommand.incident_id).in_(ids),
                        col(HumanCommand.status).in_((CommandStatus.queued, CommandStatus.running)),
                    )
                ).all()
            )
            if answered and ids
            else frozenset()
        )
        return cls({i: s for i, s in states.items() if i is not None}, valid, ended, busy)

    def over(self, incident_id: int | None, approvals: list[str]) -> tuple[str, str] | None:
        """``(state, text)`` if the question about an incident is over, else None."""
        state = self.states.get(incident_id) if incident_id else None
        answered = not any(a in self.valid for a in approvals)
        fixing = state == IncidentState.remediating or (
            state in ASKING and incident_id in self.busy
        )
        if answered and fixing:
            return None  # answered elsewhere, its fix runs: closed with how it ended, not midway
        if state is None or state not in ASKING:
            return (state or "gone"), ("Handled outside this chat." if state else "")
        if any(a in self.valid for a in approvals):
            return None
        ended = next((self.ended[a] for a in approvals if a in self.ended), "")
        if ended:  # it ended and failed again since: the newer question asks, not this one
            return ended, "Handled outside this chat; it failed again since and is asked anew."
        return "expired", (
            f"Nobody answered in time; the buttons are gone. Use /fix {incident_id} "
            f"COMMAND or guard approve|deny|reply {incident_id}."
        )
