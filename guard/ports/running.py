"""What the web endpoint and the chat channels' runners see of a running Guard (``guard.app.Guard``
is the implementation); typed here so neither imports the runtime that starts them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from guard.config import Settings
from guard.domain.records import Observation
from guard.store.db import Database


class HealthSource(Protocol):
    def health(self) -> list[dict[str, Any]]:
        """One entry per monitor: id, type, healthy (bool or None), last_check (datetime)."""
        ...


class MonitorRef(Protocol):
    @property
    def id(self) -> str: ...


class ReplicaRef(Protocol):
    @property
    def id(self) -> str: ...


class Role(Protocol):
    """This replica's part in a cluster (``guard.cluster``): a lone Guard always leads."""

    ha: bool

    @property
    def role(self) -> str:
        """``leader``, ``standby`` or ``deposed``."""
        ...

    @property
    def token(self) -> int | None:
        """The fencing token of the term it leads (None: it does not lead)."""
        ...

    @property
    def replica(self) -> ReplicaRef: ...


class Submit(Protocol):
    """The triage intake (``guard.triage.queue``), as a hook sees it."""

    async def submit(self, obs: Observation, wait: float) -> bool:
        """Queue ``obs``; True once it is stored, False if not within ``wait`` seconds."""
        ...


class Runtime(HealthSource, Protocol):
    """A running Guard: its settings, its store, its monitors and its role."""

    @property
    def leadership(self) -> Role: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def monitors(self) -> Sequence[MonitorRef]: ...

    @property
    def intake(self) -> Submit: ...


class Schedule(Protocol):
    """The check schedule (``guard.app.checks``), as readiness sees it."""

    def scheduled(self, monitor_id: str) -> bool:
        """Whether the monitor is on the schedule."""
        ...
