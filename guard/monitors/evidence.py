"""What monitor kinds give an investigation: their target's most recent lines.

Each function is a kind's ``recent_lines`` hook (``guard.monitors.kinds``): it takes the
incident, how many lines, and ``run`` (runs a read-only action for the incident, audited and
redacted by the caller, answering its summary and result). A hook that cannot read raises
``MonitorError`` (or the action's ``ActionError``) with a message for the model.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from guard.domain.exceptions import MonitorError
from guard.k8s.evidence import previous_block

RunAction = Callable[[str, dict[str, Any]], Awaitable[tuple[str, Any]]]


async def file_tail(incident: Any, lines: int, run: RunAction) -> str:
    """The last ``lines`` of the log file the incident's target names."""
    return await asyncio.to_thread(_tail, Path(incident.target), lines)


def _tail(path: Path, lines: int) -> str:
    try:
        with path.open("r", errors="replace") as f:
            return "".join(deque(f, maxlen=lines)) or "(empty)"
    except OSError as exc:
        raise MonitorError(f"cannot read {path}: {exc.strerror}") from None


def container_logs(action: str) -> Callable[[Any, int, RunAction], Awaitable[str]]:
    """A hook reading the target container's last lines through ``action`` (``{tail}``)."""

    async def recent(incident: Any, lines: int, run: RunAction) -> str:
        summary, result = await run(action, {"tail": lines})
        return f"{summary}\n(container: {json.dumps(result)})"

    return recent


async def pod_logs(incident: Any, lines: int, run: RunAction) -> str:
    """A crash's kept lines (the instance that died), else the pod container's last lines."""
    if kept := previous_block(incident.details or {}, lines):
        return kept
    return await container_logs("k8s.logs")(incident, lines, run)


async def journal_tail(incident: Any, lines: int, run: RunAction) -> str:
    """The unit's last journal entries, from the journal directory its signals carry."""
    from guard.monitors.journald import recent_entries

    folder = str((incident.details or {}).get("directory") or "/var/log/journal")
    return await recent_entries(folder, incident.target, lines)
