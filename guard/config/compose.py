"""The ``compose:`` section: the project's own compose file, the only one ``compose.up`` uses
(tests/actions/test_compose.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from guard.config.validators import Section
from guard.domain.durations import Duration


class ComposeSettings(Section):
    file: Path | None = Field(
        default=None,
        description="the project's compose file (compose.yaml); compose.up starts only "
        "services named in it",
    )
    project: str | None = Field(
        default=None, description="the compose project name (default: compose's own, the folder)"
    )
    timeout: Duration = Field(default=180.0, description="how long one compose.up may take")
