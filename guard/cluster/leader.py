"""Leadership of one ``guard run``: elect, renew, fence, and step down for good when deposed.

A replica's loop ticks every third of the lease TTL (a standby every sixth): it beats its
heartbeat row (for ``guard cluster status``) and acquires or renews the lease. Only while it
holds a term it has not lost is it the leader; ``is_leader`` also turns false on its own once
the local deadline (when the renewal started + TTL, on the monotonic clock, which runs on while
the process is stopped) passes without a renewal, so a leader cut off from Postgres stops acting
before a standby can take over.

A leader whose term ends (the lease lapsed, or another replica took it) is *deposed*: it calls
``on_deposed`` (``guard run`` stops and exits 3, and its supervisor starts it again as a fresh
standby), the way kube-controller-manager exits when it loses its Lease. Work still in flight
when that happens is refused at its claim by ``fence``/``claim``: they check the term in the
same transaction as the claim, against the database, whatever this process believes.

``Solo`` is the single-box case (SQLite, or ``ha.enabled: false``): always the leader, and
fencing is a no-op that writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from loguru import logger
from prometheus_client import Gauge
from sqlalchemy import delete
from sqlmodel import Session, col

from guard.cluster.lease import Lease, SqlLease, Term
from guard.domain.exceptions import NotLeader
from guard.domain.records import utcnow
from guard.store.cluster import ClusterAction, ClusterReplica
from guard.store.db import Database
from guard.telemetry.metrics import REGISTRY

SOLO_BEAT = 5.0
LEADER = Gauge(
    "guard_leader", "1 while this replica leads (holds an unexpired lease term).", registry=REGISTRY
)
TOKEN = Gauge(
    "guard_fencing_token", "The fencing token of this replica's term (0: none).", registry=REGISTRY
)


@dataclass(frozen=True)
class Replica:
    id: str
    pid: int
    host: str

    @classmethod
    def this(cls, name: str = "") -> Replica:
        host = socket.gethostname()
        pid = os.getpid()
        return cls(name or f"{host}:{pid}", pid, host)


class Solo:
    """The one process of a single-box Guard: always the leader; fencing writes nothing."""

    ha = False

    def __init__(self, db: Database | None = None, replica: Replica | None = None) -> None:
        self.db = db
        self.replica = replica or Replica.this()
        self.deposed = False

    @property
    def role(self) -> str:
        return "leader"

    @property
    def token(self) -> int | None:
        return None

    def is_leader(self) -> bool:
        return True

    def fence(self, session: Session) -> int:
        return 0

    def claim(self, session: Session, kind: str, ref: object) -> int:
        return 0

    async def elected(self, stop: asyncio.Event) -> bool:
        return not stop.is_set()

    async def run(self, stop: asyncio.Event, on_deposed: Callable[[], None]) -> None:
        """Keep this process's heartbeat row (``guard cluster status``) until ``stop``."""
        LEADER.set(1)
        if self.db is None:
            return
        try:
            while not stop.is_set():
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(_beat, self.db, self.replica, "leader")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), SOLO_BEAT)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(_forget, self.db, self.replica)


class Leadership:
    """A replica's part in the leader election on a shared database (or a Kubernetes Lease,
    fenced in that database)."""

    ha = True

    def __init__(
        self,
        db: Database,
        ttl: float,
        replica: Replica | None = None,
        lease: Lease | None = None,
    ) -> None:
        self.db = db
        self.ttl = ttl
        self.replica = replica or Replica.this()
        self.lease: Lease = lease or SqlLease(db, ttl)
        self.term: Term | None = None
        self.deposed = False
        self._valid_until = 0.0  # monotonic
        self._elected = asyncio.Event()

    @property
    def role(self) -> str:
        if self.deposed:
            return "deposed"
        return "leader" if self.is_leader() else "standby"

    @property
    def token(self) -> int | None:
        return self.term.token if self.term is not None else None

    def is_leader(self) -> bool:
        """Whether this replica holds a term that has not run out (by its own clock)."""
        return self.term is not None and not self.deposed and time.monotonic() < self._valid_until

    def fence(self, session: Session) -> int:
        """The fencing token, checked against the lease in ``session``'s transaction; raises
        ``NotLeader`` (and the caller's transaction rolls back) if the term is over."""
        term = self.term
        if term is None or not self.is_leader():
            raise NotLeader(f"replica {self.replica.id} is not the leader ({self.role})")
        self.lease.fence(session, self.replica.id, term.token)
        return term.token

    def claim(self, session: Session, kind: str, ref: object) -> int:
        """Fence, and record the action with its token in the same transaction."""
        token = self.fence(session)
        session.add(ClusterAction(kind=kind, ref=str(ref), token=token, replica=self.replica.id))
        return token

    def tick(self) -> bool:
        """Beat, then acquire or renew the lease (blocking; run it in a thread). Returns False
        once this replica has been deposed."""
        started = time.monotonic()
        previous = self.term
        term = self.lease.acquire(self.replica.id, previous.token if previous else None)
        if previous is not None and (term is None or term.token != previous.token):
            self._depose(
                f"term {previous.token} ended"
                + (f"; {term.holder} holds term {term.token}" if term else "")
            )
        elif term is not None:
            self.term = term
            self._valid_until = started + self.ttl
        LEADER.set(1 if self.is_leader() else 0)
        TOKEN.set(self.term.token if self.term is not None and self.is_leader() else 0)
        _beat(self.db, self.replica, "leader" if self.is_leader() else "standby")
        return not self.deposed

    def _depose(self, why: str) -> None:
        LEADER.set(0)
        TOKEN.set(0)
        if not self.deposed:
            logger.error(
                "replica {} lost the leader lease ({}); it stops acting", self.replica.id, why
            )
        self.deposed = True

    async def elected(self, stop: asyncio.Event) -> bool:
        """Wait until this replica leads (True) or ``stop`` is set (False)."""
        waiter = asyncio.create_task(self._elected.wait())
        stopper = asyncio.create_task(stop.wait())
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in (waiter, stopper):
            task.cancel()
        return self._elected.is_set() and not stop.is_set()

    async def run(self, stop: asyncio.Event, on_deposed: Callable[[], None]) -> None:
        """Tick until ``stop`` (a leader renews every third of the TTL, a standby looks twice
        as often, so it takes over soon after a lease runs out); call ``on_deposed`` when
        deposed."""
        try:
            while not stop.is_set():
                try:
                    if not await asyncio.to_thread(self.tick):
                        on_deposed()
                        return
                except Exception as exc:  # the database is unreachable: keep trying
                    logger.warning("replica {}: cannot reach the lease: {}", self.replica.id, exc)
                    if self.term is not None and not self.is_leader():
                        self._depose("could not renew it in time")
                        on_deposed()
                        return
                if self.is_leader() and not self._elected.is_set():
                    assert self.term is not None
                    logger.info(
                        "replica {} is the leader (term {})", self.replica.id, self.term.token
                    )
                    self._elected.set()
                every = self.ttl / 3 if self.is_leader() else self.ttl / 6
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), every)
        finally:
            await asyncio.to_thread(self._leave)

    def _leave(self) -> None:
        """On the way out: hand the lease over at once, and drop the heartbeat row."""
        with contextlib.suppress(Exception):
            if self.term is not None and not self.deposed:
                self.lease.release(self.replica.id, self.term.token)
        self.term = None
        with contextlib.suppress(Exception):
            _forget(self.db, self.replica)


def _beat(db: Database, replica: Replica, role: str) -> None:
    with db.session() as session:
        row = session.get(ClusterReplica, replica.id)
        if row is None:
            row = ClusterReplica(id=replica.id, pid=replica.pid, host=replica.host)
        row.role, row.last_seen = role, utcnow()
        session.add(row)


def _forget(db: Database, replica: Replica) -> None:
    with db.session() as session:
        session.execute(delete(ClusterReplica).where(col(ClusterReplica.id) == replica.id))
