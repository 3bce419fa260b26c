"""Persistence: the engine, the tables, the audit chain and small monitor state."""

from guard.store.db import Database, open_database
from guard.store.models import (
    ACTIVE_STATES,
    AuditEntry,
    Incident,
    IncidentState,
    IncidentTimeline,
    MonitorState,
)

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
