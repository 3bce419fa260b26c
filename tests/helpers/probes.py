"""Run a probe as Guard does: parsed from its text by the action registry, with settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from guard.actions import ActionContext, ActionRegistry, ActionResult
from guard.config import Settings


def probe_settings(tmp_path: Path, **probes: Any) -> Settings:
    """Settings whose ``probes:`` section is ``probes`` (nothing else configured)."""
    return Settings(data_dir=tmp_path, probes=probes)


async def probe(text: str, settings: Settings) -> ActionResult:
    """``text`` (e.g. ``probe.tcp db:5432``) run as a human's reply names it."""
    action, args = ActionRegistry().parse(text)
    return await action.run(args, ActionContext(settings))
