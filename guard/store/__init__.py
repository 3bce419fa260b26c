"""Persistence: the engine, the tables, the audit chain and small monitor state.

The names below are imported on first use (SQLModel and SQLAlchemy take a third of a second),
so that ``guard.store.fastread`` and the CLI's read path can be imported without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guard.store.db import Database, open_database
    from guard.store.models import (
        ACTIVE_STATES,
        AuditEntry,
        Incident,
        IncidentState,
        IncidentTimeline,
        MonitorState,
    )

_WHERE = {
    "Database": "guard.store.db",
    "open_database": "guard.store.db",
    "ACTIVE_STATES": "guard.store.models",
    "AuditEntry": "guard.store.models",
    "Incident": "guard.store.models",
    "IncidentState": "guard.store.models",
    "IncidentTimeline": "guard.store.models",
    "MonitorState": "guard.store.models",
}

__all__ = [
    "ACTIVE_STATES",
    "AuditEntry",
    "Database",
    "Incident",
    "IncidentState",
    "IncidentTimeline",
    "MonitorState",
    "open_database",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
