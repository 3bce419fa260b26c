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

from sqlalchemy import func, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from guard.exceptions import NotLeader
from guard.records import utcnow
from guard.store.cluster import ClusterLease
from guard.store.db import Database

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
            lease = col(ClusterLease.name) == self.name
            if token is not None:
                renewed = session.execute(
                    update(ClusterLease)
                    .where(
                        lease,
                        col(ClusterLease.holder) == holder,
                        col(ClusterLease.token) == token,
                        col(ClusterLease.expires_at) > now,
                    )
                    .values(expires_at=until, renewed_at=now)
                )
                if getattr(renewed, "rowcount", 0) == 1:
                    return Term(holder, token, until)
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

    def release(self, holder: str, token: int) -> bool:
        """End ``holder``'s term now (a clean shutdown), so a standby need not wait the TTL."""
        with self.db.session() as session:
            now = self.now(session)
            done = session.execute(
                update(ClusterLease)
                .where(
                    col(ClusterLease.name) == self.name,
                    col(ClusterLease.holder) == holder,
                    col(ClusterLease.token) == token,
                    col(ClusterLease.expires_at) > now,
                )
                .values(expires_at=now)
            )
            return getattr(done, "rowcount", 0) == 1

    def fence(self, session: Session, holder: str, token: int) -> None:
        """Raise ``NotLeader`` unless ``holder``'s term ``token`` still runs, as part of the
        caller's transaction (on Postgres a takeover then waits for it to commit)."""
        query = select(col(ClusterLease.token)).where(
            col(ClusterLease.name) == self.name,
            col(ClusterLease.holder) == holder,
            col(ClusterLease.token) == token,
        )
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
