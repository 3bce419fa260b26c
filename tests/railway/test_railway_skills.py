"""The built-in Railway skills are well-formed data that name real actions and real signals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from guard.actions.registry import ActionRegistry
from guard.monitors.railway import FIRING

pytestmark = pytest.mark.unit

SKILLS = Path(__file__).resolve().parents[2] / "skills"
NAMES = ["railway-restart-crashed", "railway-rollback-failed-deploy"]
SECTIONS = ["## When to use", "## Procedure", "## Pitfalls", "## Verification"]


@pytest.mark.parametrize("name", NAMES)
def test_skill_folder_is_valid(name):
    text = (SKILLS / name / "SKILL.md").read_text()
    m = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert m, "SKILL.md starts with YAML frontmatter"
    front, body = yaml.safe_load(m.group(1)), m.group(2)
    assert set(front) <= {"name", "description", "license", "metadata"}
    assert front["name"] == name and re.fullmatch(r"[a-z0-9-]{1,64}", name)
    assert 0 < len(front["description"]) <= 1024
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in front["metadata"].items())
    positions = [body.index(s) for s in SECTIONS]
    assert positions == sorted(positions)

    spec = yaml.safe_load((SKILLS / name / "skill.yaml").read_text())
    assert spec["trust"] == "trusted" and spec["origin"] == "builtin"
    assert set(spec["limits"]) == {"max_runs", "window"}
    [trigger] = spec["triggers"]
    assert trigger["source"] == "railway" and trigger["kind"] in FIRING.values()
    actions = [s["action"] for s in spec["steps"] if "action" in s]
    registry = ActionRegistry()
    for action in actions:
        registry.get(action)  # exists
    assert actions == [front["metadata"]["action"]]
    assert spec["steps"][-1].keys() == {"verify"}
