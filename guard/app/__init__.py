"""The Guard runtime: schedules monitors, follows streams, feeds triage, survives failures.

- ``core``: the ``Guard`` itself: triage of each batch, and start, run and stop.
- ``monitoring``: the running monitors: checks, event streams, their state and health.
- ``reload``: playbook files applied when they change (an invalid edit changes nothing).
- ``selfhealth``: signals about Guard's own parts, and its housekeeping jobs.
- ``process``: tuning of the process at start (malloc arenas, the frozen start-up heap).
- ``wiring``: what a Guard is built from: triage policies, the agent and its notifier.
"""

from guard.app.core import EventHook, Guard, redact_observation
from guard.app.process import freeze_startup_heap
from guard.app.selfhealth import (
    monitor_error_signal,
    monitor_ok_signal,
    skill_invalid_signals,
)
from guard.app.wiring import triage_policies

__all__ = [
    "EventHook",
    "Guard",
    "freeze_startup_heap",
    "monitor_error_signal",
    "monitor_ok_signal",
    "redact_observation",
    "skill_invalid_signals",
    "triage_policies",
]
