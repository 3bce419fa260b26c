"""The leader lease: one row in the shared database, changed only by conditional updates.

- **Renew**: ``UPDATE ... SET expires_at = now + ttl WHERE holder = me AND token = mine AND
  expires_at > now``. A term continues only while it has never lapsed.
- **Take over**: ``UPDATE ... SET holder = me, token = token + 1, expires_at = now + ttl WHERE
  expires_at <= now``. Two standbys racing update the same row; the database serialises them
  and the loser's ``WHERE`` no longer matches, so exactly one wins. The token only grows: it is
  the *fencing token* of the term.
- **Fence**: an action is claimed in a transaction that first reads the lease row ``WHERE holder
  = me AND token = mine AND expires_at > now`` (on Postgres ``FOR SHARE``, which makes a takeover
  wait until the claim has committed). A replica whose term ended, however late it wakes up,
  finds no row and raises ``NotLeader``; its claim is rolled back with the transaction.

Time is the database's clock on Postgres (``clock_timestamp()``), so replicas on hosts whose
clocks disagree still agree on when a lease runs out; SQLite (one host) uses the local clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy import func, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col

from guard.domain.exceptions import NotLeader
from guard.domain.records import utcnow
from guard.store.cluster import ClusterLease
from guard.store.db import Database

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Lease(Protocol):
    """Where the leader is elected: ``SqlLease`` (a database row) or ``KubeLease``."""

    def read(self) -> Term | None: ...

    def acquire(self, holder: str, token: int | None = None) -> Term | None: ...

    def release(self, holder: str, token: int) -> bool: ...

    def fence(self, session: Session, holder: str, token: int) -> None: ...


@dataclass(frozen=True)
class Term:
    """One leader's term: who holds the lease, its fencing token, and when it runs out."""

    holder: str
    token: int
    expires_at: datetime


class SqlLease:
    """A named lease in ``cluster_lease``, lasting ``ttl`` seconds unless renewed."""

    def __init__(self, db: Database, ttl: float, name: str = "leader") -> None:
        self.db = db
        self.ttl = ttl
        self.name = name

    def _term(self, holder: str, token: int) -> tuple[ColumnElement[bool], ...]:
        """Where the lease row is ``holder``'s term ``token``."""
        return (
            col(ClusterLease.name) == self.name,
            col(ClusterLease.holder) == holder,
            col(ClusterLease.token) == token,
        )

    def now(self, session: Session) -> datetime:
        """The database's clock (Postgres), else this host's."""
        if self.db.is_postgres:
            value = session.execute(text("SELECT clock_timestamp()")).scalar_one()
            assert isinstance(value, datetime)
            return value.astimezone(UTC)
        return utcnow()

    def _ensure(self) -> None:
        try:
            with self.db.session() as session:
                if session.get(ClusterLease, self.name) is None:
                    session.add(ClusterLease(name=self.name, expires_at=EPOCH))
        except IntegrityError:
            pass  # another replica created it first

    def read(self) -> Term | None:
        """The current holder (even if its lease ran out), or None if nobody ever held it."""
        with self.db.session() as session:
            row = session.get(ClusterLease, self.name)
            if row is None or not row.holder:
                return None
            return Term(row.holder, row.token, row.expires_at)

    def acquire(self, holder: str, token: int | None = None) -> Term | None:
        """Renew ``holder``'s term ``token`` if it has not lapsed, else take the lease if it is
        free or has run out (a new term, token + 1). None: another replica holds it."""
        self._ensure()
        with self.db.session() as session:
            now = self.now(session)
            until = now + timedelta(seconds=self.ttl)
            if token is not None and self._renew(session, now, holder, token):
                return Term(holder, token, until)
            lease = col(ClusterLease.name) == self.name
            taken = session.execute(
                update(ClusterLease)
                .where(lease, col(ClusterLease.expires_at) <= now)
                .values(
                    holder=holder,
                    token=col(ClusterLease.token) + 1,
                    expires_at=until,
                    acquired_at=now,
                    renewed_at=now,
                )
            )
            if getattr(taken, "rowcount", 0) != 1:
                return None
            new = session.execute(select(col(ClusterLease.token)).where(lease)).scalar_one()
            return Term(holder, int(new), until)

    def _renew(self, session: Session, now: datetime, holder: str, token: int) -> bool:
        renewed = session.execute(
            update(ClusterLease)
            .where(*self._term(holder, token), col(ClusterLease.expires_at) > now)
            .values(expires_at=now + timedelta(seconds=self.ttl), renewed_at=now)
        )
        return getattr(renewed, "rowcount", 0) == 1

    def renew(self, holder: str, token: int) -> Term | None:
        """Extend ``holder``'s term ``token`` by the TTL if it has not lapsed, else None."""
        with self.db.session() as session:
            now = self.now(session)
            if not self._renew(session, now, holder, token):
                return None
            return Term(holder, token, now + timedelta(seconds=self.ttl))

    def top(self) -> int:
        """The largest token ever given out (0: none)."""
        self._ensure()
        with self.db.session() as session:
            row = session.get(ClusterLease, self.name)
            return row.token if row is not None else 0

    def raise_to(self, holder: str, token: int) -> Term | None:
        """Start ``holder``'s term ``token``, elected elsewhere (a Kubernetes Lease), if the
        token is larger than any before: the fences of every earlier term fail from then on.
        None: a term with a token as large exists already."""
        self._ensure()
        with self.db.session() as session:
            now = self.now(session)
            until = now + timedelta(seconds=self.ttl)
            raised = session.execute(
                update(ClusterLease)
                .where(col(ClusterLease.name) == self.name, col(ClusterLease.token) < token)
                .values(
                    holder=holder, token=token, expires_at=until, acquired_at=now, renewed_at=now
                )
            )
            if getattr(raised, "rowcount", 0) != 1:
                return None
            return Term(holder, token, until)

    def release(self, holder: str, token: int) -> bool:
        """End ``holder``'s term now (a clean shutdown), so a standby need not wait the TTL."""
        with self.db.session() as session:
            now = self.now(session)
            done = session.execute(
                update(ClusterLease)
                .where(*self._term(holder, token), col(ClusterLease.expires_at) > now)
                .values(expires_at=now)
            )
            return getattr(done, "rowcount", 0) == 1

    def fence(self, session: Session, holder: str, token: int) -> None:
        """Raise ``NotLeader`` unless ``holder``'s term ``token`` still runs, as part of the
        caller's transaction (on Postgres a takeover then waits for it to commit)."""
        query = select(col(ClusterLease.token)).where(*self._term(holder, token))
        if self.db.is_postgres:
            query = query.where(
                col(ClusterLease.expires_at) > func.clock_timestamp()
            ).with_for_update(read=True)
        else:
            query = query.where(col(ClusterLease.expires_at) > utcnow())
        if session.execute(query).first() is None:
            raise NotLeader(
                f"the leader lease's term {token} of {holder} is over; "
                "another replica leads (or none can reach the database)"
            )
