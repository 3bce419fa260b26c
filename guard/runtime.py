"""What the web endpoint and the Telegram gateway see of a running Guard (``guard.app.Guard``
is the implementation); typed here so neither imports the runtime that starts them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from guard.config import Settings
from guard.store.db import Database


class HealthSource(Protocol):
    def health(self) -> list[dict[str, Any]]:
        """One entry per monitor: id, type, healthy (bool or None), last_check (datetime)."""
        ...


class MonitorRef(Protocol):
    @property
    def id(self) -> str: ...


class Runtime(HealthSource, Protocol):
    """A running Guard: its settings, its store and its monitors."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def monitors(self) -> Sequence[MonitorRef]: ...
