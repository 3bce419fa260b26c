"""Templating (issue 13, finding 7): whatever a log line holds, a rendered ``run`` command runs
it as data, whether the template puts it bare, in double quotes or in single quotes, and
whatever its type."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from guard.agent.templating import incident_context, render


def _ctx(canary: Path, **details: Any) -> dict[str, Any]:
    evil = f"x $(touch {canary}) `touch {canary}` \" ' \\ ; touch {canary} # end"
    inc = SimpleNamespace(
        id=1,
        target="api",
        kind="k",
        source="logfile",
        severity="error",
        monitor_id="m",
        count=2,
        message=evil,
        details={"nested": {"k": evil}, "items": [evil, 3], **details},
    )
    return incident_context(inc)


def _sh(command: str) -> str:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(
    "template",
    [
        "echo {{ incident.message }}",
        'echo "{{ incident.message }}"',
        "echo '{{ incident.message }}'",
        'echo "said: {{ incident.message }}!"',
        "echo {{ incident.details.nested }}",
        "echo {{ incident.details.items }}",
        'echo "{{ incident.details.nested }}"',
    ],
)
def test_values_stay_data_wherever_they_land(tmp_path: Path, template: str) -> None:
    canary = tmp_path / "pwned"
    ctx = _ctx(canary)
    printed = _sh(render(template, ctx, shell=True))
    assert not canary.exists(), f"{template!r} ran part of the log line"
    if "message" in template:
        assert ctx["incident"]["message"] in printed


def test_numbers_and_literal_braces_render_as_before(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path / "x")
    assert render("exit {{ incident.count }}", ctx, shell=True) == "exit 2"
    assert (
        render(
            "docker inspect -f '{% raw %}{{.State.Status}}{% endraw %}' {{ incident.target }}",
            ctx,
            shell=True,
        )
        == "docker inspect -f '{{.State.Status}}' api"
    )
