"""Tables of the replica cluster: the leader lease, the replicas, and the fenced-action log.

``cluster_lease`` holds one row per lease name (``leader``): who holds it, its fencing ``token``
(incremented by every change of holder, never reused) and when it runs out. ``cluster_replica``
is each ``guard run``'s heartbeat, for ``guard cluster status``. ``cluster_action`` records every
action a leader claimed with the token it held, so what each term did can be audited.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column
from sqlmodel import Field, SQLModel

from guard.store.models import UTCDateTime, now_column


class ClusterLease(SQLModel, table=True):
    __tablename__ = "cluster_lease"

    name: str = Field(primary_key=True)
    holder: str = ""
    token: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    expires_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    acquired_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    renewed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ClusterReplica(SQLModel, table=True):
    __tablename__ = "cluster_replica"

    id: str = Field(primary_key=True)
    pid: int
    host: str
    role: str = "standby"  # leader, standby
    started_at: datetime = now_column(nullable=False)
    last_seen: datetime = now_column(nullable=False)


class ClusterAction(SQLModel, table=True):
    __tablename__ = "cluster_action"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True)  # step, outbox.queue, outbox.send
    ref: str = ""
    token: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    replica: str
    at: datetime = now_column(nullable=False)
