"""Triage: fingerprints, deduplication, flap control and the incident state machine."""

from guard.triage.engine import Triage, TriagePolicy
from guard.triage.states import TRANSITIONS, transition

__all__ = ["TRANSITIONS", "Triage", "TriagePolicy", "transition"]
