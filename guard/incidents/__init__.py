"""Incidents' lifecycle (the state machine, the timeline, the audit write) and the queue of
human commands about them, behind one authorisation gate (``gate``). Triage, the agent, the CLI
and every chat channel go through here; nothing else writes ``Incident.state``."""

from guard.incidents.lifecycle import TRANSITIONS, Lifecycle, record, transition

__all__ = ["TRANSITIONS", "Lifecycle", "record", "transition"]
