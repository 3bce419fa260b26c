"""A proposed promotion put to an admin as a question, where there is no git remote.

``tend`` (a leader's job of ``guard run``, every few seconds) finds each open proposal
(``guard.skills.ladder``) not asked yet, and in ONE transaction makes its two single-use
approvals (*Promote*, *Keep asking*: ``guard.store.ladder.ANSWERS``), queues the question in
every chat channel's outbox (rendered by the channel's ``Markup``, its buttons those
approvals) and marks the proposal asked: a crash leaves all of it or none, so the question goes
out once, also across a restart. Without a chat channel, the console is told the commands. The
press is ``guard.notify.answers.promotepress``; the answer is applied by
``guard.skills.localpromotion``, and ``close_in`` edits every copy of the question to say who
answered what, its buttons gone.

Tested by tests/skills/test_localpromotion.py.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from loguru import logger
from sqlmodel import Session, col, select

from guard.config import Settings
from guard.domain.records import utcnow
from guard.notify.base import Notifier
from guard.notify.channel import Markup
from guard.notify.fanout import ChannelNotifier, FanOut
from guard.notify.outbox import queue
from guard.notify.plain import PlainMarkup
from guard.notify.related import markup_of
from guard.skills import localpromotion
from guard.skills.localpromotion import Recovery
from guard.store import audit
from guard.store.db import Database
from guard.store.edits import EditTarget
from guard.store.ladder import KEEP, PROMOTE, PROPOSED, LadderStep, open_steps
from guard.store.models import Approval, OutboxMessage

ROLE = "promotion"  # the outbox role of the question (not an incident's: no sync closes it)
TTL = 30 * 86400.0  # the buttons work this long; `guard skills promote NAME` any time


def channels_of(notifier: Notifier) -> list[ChannelNotifier]:
    """The chat channels among a notifier (a fan-out's, or itself)."""
    found = notifier.notifiers if isinstance(notifier, FanOut) else [notifier]
    return [n for n in found if isinstance(n, ChannelNotifier)]


def question(markup: Markup, skill: str, was: str, runs: list[Recovery]) -> str:
    """The question's text, in the channel's markup."""
    lines = [
        markup.bold(f"Promote skill {skill} to trust: trusted?"),
        markup.escape(f"It healed {len(runs)} faults with no reversal:"),
    ]
    lines += [
        markup.escape(
            f"• {r.at:%Y-%m-%d %H:%M} UTC, incident #{r.incident_id} ({r.target}): "
            f"recovered in {r.seconds:.1f}s"
        )
        for r in runs
    ]
    lines += [
        markup.code(f"-trust: {was or 'approval'}"),
        markup.code("+trust: trusted"),
        markup.escape(
            "Promote: it runs by itself from now on (committed to the skills repository). "
            "Keep asking: it is proposed again after as many new verified recoveries. "
            "Needs the admin role; or on the host: "
        )
        + markup.code(f"guard skills promote {skill}"),
    ]
    return markup.cut("\n".join(lines))


def tend(db: Database, settings: Settings, notifier: Notifier) -> list[str]:
    """The job: finish the promotions an admin answered (after a crash too), then ask about
    each proposal not asked yet; the skills asked about."""
    if settings.skills.git_remote:
        return []  # proposed as a branch for review instead (``guard.skills.promotion``)
    for note in localpromotion.complete(db, settings):
        logger.info("{}", note)
    with db.session() as session:
        waiting = [
            s.id
            for s in open_steps(session)
            if s.step == PROPOSED and not s.details.get("asked") and s.id is not None
        ]
    asked = []
    for step_id in waiting:
        queued: list[tuple[OutboxMessage, int]] = []
        with db.session() as session:
            step = session.get(LadderStep, step_id)
            if step is None or step.closed_at is not None or step.details.get("asked"):
                continue
            runs = localpromotion.recoveries(session, step, settings.skills.promote_after)
            if not runs:  # made by `guard skills promote`: nothing to ask
                continue
            was = localpromotion.trust_was(settings, step.skill)
            ids = _approvals(session, runs[-1].incident_id, step.skill)
            chats = []
            channels = channels_of(notifier)
            if not channels:  # the console: the question in the log, answered by the CLI
                logger.warning("\n{}", question(PlainMarkup(), step.skill, was, runs))
            for channel in channels:
                text = question(channel.markup, step.skill, was, runs)
                buttons = [[("Promote", ids[0]), ("Keep asking", ids[1])]]
                row = OutboxMessage(
                    channel=channel.channel,
                    method="send",
                    chat_id=channel.chat_id,
                    text=text,
                    role=ROLE,
                    buttons=[[list(b) for b in r] for r in buttons],
                )
                queued.append((row, queue.add(session, row, channel.channel)))
                chats.append(f"{channel.channel}:{channel.chat_id}")
            step.details = {**step.details, "asked": True, "approvals": ids, "chats": chats}
            session.add(step)
            audit.append(
                session,
                actor="guard",
                action="skill.promotion_asked",
                subject=f"skill:{step.skill}",
                data={"chats": chats, "runs": [r.incident_id for r in runs]},
            )
        for row, outbox_id in queued:
            queue.remember(db, row, outbox_id)
        asked.append(step.skill)
    return asked


def _approvals(session: Session, incident_id: int, skill: str) -> list[str]:
    """The question's two buttons: single-use, tied to the incident of the last recovery."""
    expires = utcnow() + timedelta(seconds=TTL)
    ids = [secrets.token_urlsafe(16), secrets.token_urlsafe(16)]
    for approval_id, kind in zip(ids, (PROMOTE, KEEP), strict=True):
        session.add(
            Approval(
                id=approval_id,
                incident_id=incident_id,
                kind=kind,
                skill=skill,
                expires_at=expires,
            )
        )
    return ids


def close_in(session: Session, step: LadderStep, answer: str) -> list[tuple[OutboxMessage, int]]:
    """In the transaction that records the answer: an edit of each copy of ``step``'s
    question (posted or still queued), its text with ``answer`` below, no buttons. The rows
    and their ids, to ``queue.remember`` after the commit."""
    approvals = set(step.details.get("approvals") or [])
    posts = session.exec(
        select(OutboxMessage)
        .where(OutboxMessage.role == ROLE, OutboxMessage.method == "send")
        .order_by(col(OutboxMessage.id))
    ).all()
    queued = []
    for post in posts:
        if post.id is None or not approvals & {b[1] for r in post.buttons for b in r}:
            continue
        markup = markup_of(post.channel) or PlainMarkup()
        row = OutboxMessage(
            channel=post.channel,
            method="edit",
            chat_id=post.chat_id,
            text=markup.cut(f"{post.text}\n{markup.bold(markup.escape(answer))}"),
            role=ROLE,
        )
        outbox_id = queue.add(session, row, post.channel)
        session.add(EditTarget(outbox_id=outbox_id, post=post.id))
        queued.append((row, outbox_id))
    return queued
