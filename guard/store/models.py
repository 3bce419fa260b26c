"""SQLModel tables: incidents and their timeline, monitor state, and the audit chain."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import JSON, Column, DateTime, Index, LargeBinary, String, Text, TypeDecorator
from sqlmodel import Field, SQLModel

from guard.domain.records import IncidentState as IncidentState
from guard.domain.records import utcnow


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware datetimes that come back aware from SQLite too."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


E = TypeVar("E", bound=StrEnum)


class EnumText(TypeDecorator[E]):
    """A ``StrEnum`` stored as its plain string value (the column stays VARCHAR, so existing
    databases need no migration), read back as the enum; an unknown value fails loudly."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[E]) -> None:
        super().__init__()
        self.enum = enum

    def process_bind_param(self, value: E | str | None, dialect: Any) -> str | None:
        return None if value is None else self.enum(value).value

    def process_result_value(self, value: str | None, dialect: Any) -> E | None:
        return None if value is None else self.enum(value)


def _enum(default: E, *, index: bool = False) -> Any:
    return Field(
        default=default, sa_column=Column(EnumText(type(default)), nullable=False, index=index)
    )


def now_column(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_column=Column(UTCDateTime(), **kw))


ACTIVE_STATES = frozenset(IncidentState) - {IncidentState.resolved}
# Indexes added after their tables first shipped: created on open where missing.
LATER_INDEXES = (
    "ix_incident_state_id",
    "ix_incident_opened_at",
    "ix_incident_resolved_at",
    "ix_incident_timeline_at",
    "ix_audit_log_at",
)


class StepStatus(StrEnum):
    pending = "pending"
    running = "running"
    done = "done"
    failed = "failed"
    skipped = "skipped"
    interrupted = "interrupted"


class RunStatus(StrEnum):
    running = "running"
    verified = "verified"
    failed = "failed"
    interrupted = "interrupted"


class RunOrigin(StrEnum):
    skill = "skill"
    human = "human"


class CommandStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"


class OutboxStatus(StrEnum):
    pending = "pending"
    in_flight = "in_flight"  # posted, outcome unknown (``InFlight``)
    sent = "sent"
    failed = "failed"
    skipped = "skipped"


HUMAN_FIX = "human-fix"
"""The ``skill`` name of a remediation run that carried out a human's fix."""


class Incident(SQLModel, table=True):
    """One problem, however many signals it took; deduplicated by ``fingerprint``."""

    __table_args__ = (
        Index("ix_incident_fp_state", "fingerprint", "state"),
        Index("ix_incident_state_id", "state", "id"),  # list --state, newest first
        Index("ix_incident_opened_at", "opened_at"),  # the daily report's windows
        Index("ix_incident_resolved_at", "resolved_at"),
    )  # ...and retention

    id: int | None = Field(default=None, primary_key=True)
    fingerprint: str = Field(index=True)
    check_key: str = Field(index=True)
    monitor_id: str
    source: str
    target: str
    kind: str
    severity: str
    title: str
    message: str = Field(sa_column=Column(Text, nullable=False))
    state: IncidentState = _enum(IncidentState.open, index=True)
    count: int = 0
    reopen_count: int = 0
    flapping: bool = False
    opened_at: datetime = now_column(nullable=False)
    first_seen: datetime = now_column(nullable=False)
    last_seen: datetime = now_column(nullable=False)
    resolved_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class LogTemplate(SQLModel, table=True):
    """An event template mined from log lines; its id is part of incident fingerprints, so it
    never changes, while ``template`` may generalise (a token becomes ``<*>``)."""

    __tablename__ = "log_template"

    id: int | None = Field(default=None, primary_key=True)
    template: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = now_column(nullable=False)
    updated_at: datetime = now_column(nullable=False)


class IncidentTimeline(SQLModel, table=True):
    """One entry in an incident's history: a state change, a count update, an action..."""

    __tablename__ = "incident_timeline"
    __table_args__ = (Index("ix_incident_timeline_at", "at"),)  # the daily report's escalations

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    at: datetime = now_column(nullable=False)
    type: str
    from_state: str | None = None
    to_state: str | None = None
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class MonitorState(SQLModel, table=True):
    """Small persisted state by key: log offsets, consecutive-failure counters, cursors."""

    __tablename__ = "monitor_state"

    key: str = Field(primary_key=True)
    value: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    updated_at: datetime = now_column(nullable=False)


class AuditEntry(SQLModel, table=True):
    """One link of the tamper-evident audit chain (see ``guard.store.audit``)."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_at", "at"),)  # retention's cut

    seq: int = Field(primary_key=True)
    at: datetime = now_column(nullable=False)
    actor: str
    action: str
    subject: str
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    prev_hash: str
    hash: str


# -- the agent's durable state ------------------------------------------------------------------


class AgentStep(SQLModel, table=True):
    """One step of a remediation, persisted before and after it runs, so a restart resumes an
    incident without repeating a completed (or possibly completed) action."""

    __tablename__ = "agent_step"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    run_id: int = Field(foreign_key="remediation_run.id", index=True)
    index: int
    kind: str  # run, action, wait, verify
    description: str = ""
    status: StepStatus = _enum(StepStatus.pending)
    started_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    result: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class RemediationRun(SQLModel, table=True):
    """One attempt to cure an incident: a skill run, or a human's fix."""

    __tablename__ = "remediation_run"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    skill: str = Field(index=True)  # skill name, or HUMAN_FIX
    target: str = Field(index=True)
    origin: RunOrigin = _enum(RunOrigin.skill)
    approved_by: str | None = None
    fix: str | None = Field(default=None, sa_column=Column(Text))  # a human's fix, as given
    status: RunStatus = _enum(RunStatus.running)
    started_at: datetime = now_column(nullable=False)
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    message: str = Field(default="", sa_column=Column(Text, nullable=False))


class SkillBlock(SQLModel, table=True):
    """A skill disabled for one target by the circuit breaker (two failed runs in a row)."""

    __tablename__ = "skill_block"

    id: int | None = Field(default=None, primary_key=True)
    skill: str = Field(index=True)
    target: str = Field(index=True)
    reason: str = ""
    created_at: datetime = now_column(nullable=False)
    cleared_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class Approval(SQLModel, table=True):
    """A single-use, expiring decision a human may take (its ``id`` is opaque and short enough
    for a chat button's 64-byte callback data)."""

    id: str = Field(primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    kind: str  # skill, deny, mute, fix
    skill: str | None = None
    created_at: datetime = now_column(nullable=False)
    expires_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    used_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    used_by: str | None = None


class HumanCommand(SQLModel, table=True):
    """A human's answer (approve, deny, reply) queued for the agent, with its outcome."""

    __tablename__ = "human_command"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    verb: str  # approve, deny, reply
    skill: str | None = None
    fix: str | None = Field(default=None, sa_column=Column(Text))
    actor: str
    channel: str = "cli"  # cli, or the chat channel it came through
    status: CommandStatus = _enum(CommandStatus.queued, index=True)
    outcome: str = Field(default="", sa_column=Column(Text, nullable=False))
    created_at: datetime = now_column(nullable=False)
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ConversationMessage(SQLModel, table=True):
    """Every message exchanged with a human, per chat."""

    __tablename__ = "conversation"

    id: int | None = Field(default=None, primary_key=True)
    chat: str = Field(index=True)  # "console", or a channel's chat id
    direction: str  # in, out
    author: str
    text: str = Field(sa_column=Column(Text, nullable=False))
    incident_id: int | None = Field(default=None, index=True)
    at: datetime = now_column(nullable=False)
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


# -- channels (the durable outbox and what it knows of each chat) and mutes ------------------
# Every row names its ``channel`` (the name a channel adapter registers under) and a chat of it.


class ChannelMessage(SQLModel, table=True):
    """A message Guard posted in a channel's chat, so presses and replies map back to their
    incident."""

    __tablename__ = "channel_message"
    __table_args__ = (
        Index("ix_channel_message_chat_msg", "channel", "chat_id", "message_id", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    channel: str = Field(index=True)
    chat_id: str
    message_id: str  # the channel's own id for it (a number, Slack's ts, Matrix's $event id)
    incident_id: int | None = Field(default=None, index=True)
    role: str = "text"  # incident (the one with buttons), group, prompt, reply, text, report
    live: bool = False  # its buttons still work
    approvals: list[str] = Field(default_factory=list, sa_column=Column(JSON))  # its buttons' ids
    created_at: datetime = now_column(nullable=False)


class MessageGroupMember(SQLModel, table=True):
    """One incident of a grouped message (several incidents, one message): its line and its
    buttons, so an answer or an update to one incident re-renders the whole message."""

    __tablename__ = "message_group_member"

    id: int | None = Field(default=None, primary_key=True)
    channel: str = Field(index=True)
    chat_id: str = Field(index=True)
    message_id: str = Field(index=True)
    incident_id: int = Field(index=True)
    text: str = Field(default="", sa_column=Column(Text, nullable=False))
    buttons: list[Any] = Field(default_factory=list, sa_column=Column(JSON))
    live: bool = True


class OutboxMessage(SQLModel, table=True):
    """One outgoing call to a channel, written before it is tried and marked when it is done."""

    __tablename__ = "outbox"

    id: int | None = Field(default=None, primary_key=True)
    channel: str = Field(default="", index=True)  # set when queued (``outbox.queue.add``)
    method: str  # send, edit, photo
    chat_id: str
    incident_id: int | None = Field(default=None, index=True)
    role: str = "text"
    reply_to_incident: bool = False
    text: str = Field(default="", sa_column=Column(Text, nullable=False))
    buttons: list[Any] = Field(default_factory=list, sa_column=Column(JSON))
    photo: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    status: OutboxStatus = _enum(OutboxStatus.pending, index=True)
    attempts: int = 0
    error: str = Field(default="", sa_column=Column(Text, nullable=False))
    created_at: datetime = now_column(nullable=False)
    sent_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class InFlight(SQLModel, table=True):
    """A post whose outcome is not known: committed before the call, removed in the transaction
    that stores the message id. After a crash the outbox asks the channel for the message above
    ``floor`` before it posts again (``guard.notify.outbox.inflight``)."""

    __tablename__ = "in_flight"

    id: int | None = Field(default=None, primary_key=True)
    channel: str = Field(index=True)
    chat_id: str = Field(index=True)
    outbox_ids: list[int] = Field(default_factory=list, sa_column=Column(JSON))
    method: str  # send, photo
    text: str = Field(default="", sa_column=Column(Text, nullable=False))  # as sent (or caption)
    buttons: list[Any] = Field(default_factory=list, sa_column=Column(JSON))  # as sent
    floor: int  # the highest message id Guard knew in the chat before the call
    created_at: datetime = now_column(nullable=False)


class InboundUpdate(SQLModel, table=True):
    """An incoming update Guard handled, stored with what it did: one delivered again (Guard
    died before the channel confirmed it) is skipped. Kept two days. Its message id also tells
    the outbox how far the chat's message ids have gone."""

    __tablename__ = "inbound_update"

    channel: str = Field(primary_key=True)
    update_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    chat_id: str = Field(default="", index=True)
    message_id: str | None = None
    at: datetime = now_column(nullable=False, index=True)


class Mute(SQLModel, table=True):
    """A target whose incidents Guard records but neither announces nor remediates."""

    id: int | None = Field(default=None, primary_key=True)
    target: str = Field(index=True)
    until: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    by: str
    created_at: datetime = now_column(nullable=False)
    cleared_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class Trajectory(SQLModel, table=True):
    """One handling of an incident, with or without a model: the conversation (OpenAI form,
    redacted), the tools offered, how it ended, what it cost. ``guard trajectories export``."""

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    model: str | None = None
    tools: list[Any] = Field(default_factory=list, sa_column=Column(JSON))
    messages: list[Any] = Field(default_factory=list, sa_column=Column(JSON))
    outcome: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    usage: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    tool_stats: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = now_column(nullable=False)


class AccessToken(SQLModel, table=True):
    """A token for the web console, the API or a machine (``guard access``): its name, its role
    and the sha256 of its secret. The secret itself is never stored."""

    __tablename__ = "access_token"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    role: str  # guard.access.roles.Role's name
    digest: str = Field(unique=True)  # sha256 hex of the secret
    created_at: datetime = now_column(nullable=False)
    revoked_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    last_used_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
