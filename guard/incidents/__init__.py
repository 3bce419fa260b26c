"""Incidents' lifecycle (the state machine, the timeline, the audit write) and the queue of
human commands about them. Triage, the agent, the CLI and the Telegram gateway all go through
here; nothing else writes ``Incident.state``."""

from guard.incidents.lifecycle import TRANSITIONS, Lifecycle, record, transition

__all__ = ["TRANSITIONS", "Lifecycle", "record", "transition"]
