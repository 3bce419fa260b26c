"""Triage: fingerprints, deduplication, flap control and storms; incidents' moves go through
``guard.incidents.lifecycle``."""

from guard.triage.engine import Triage, TriagePolicy

__all__ = ["Triage", "TriagePolicy"]
