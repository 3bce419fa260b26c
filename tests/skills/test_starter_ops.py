"""The web, container, Kubernetes and Railway half of the starter library (issue 45 item 3) is
well-formed data: each skill loads as Guard loads it, fires on a signal kind a monitor really
emits, attaches evidence before anyone is asked (read-only actions only), names actions that
exist, and changes nothing without a human (the two Railway ones keep their trust)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guard.actions.registry import ActionRegistry
from guard.k8s import pods
from guard.monitors import docker, railway
from guard.skills.library import load_skill
from tests.helpers.agent import REPO, new_incident

pytestmark = pytest.mark.unit

ASKING = [
    "nginx-upstream-down",
    "docker-oom-raise-memory",
    "docker-memory-leak-restart",
    "k8s-bad-rollout",
    "k8s-oom-killed",
]
RAILWAY = ["railway-restart-crashed", "railway-rollback-failed-deploy"]
EVIDENCE = {"docker.logs", "docker.inspect", "k8s.logs", "k8s.events", "railway.logs"}
EMITTED = {  # each kind, and where a monitor emits it
    "container_oom_killed": docker,
    "k8s_crash_loop_back_off": pods,
    "k8s_image_pull_failed": pods,
    "k8s_oom_killed": pods,
    "railway_deployment_crashed": railway,
    "railway_deployment_failed": railway,
}


@pytest.mark.parametrize("name", ASKING + RAILWAY)
def test_a_starter_skill_loads_attaches_evidence_and_names_real_actions(name: str) -> None:
    skill = load_skill(REPO / "skills" / name)
    assert skill.spec.origin == "builtin"
    assert skill.spec.trust == ("trusted" if name in RAILWAY else "approval")
    assert skill.spec.limits.max_runs <= 3
    assert skill.spec.diagnostics, "evidence before anyone is asked"
    registry = ActionRegistry()
    for step in skill.spec.diagnostics:
        assert step.action in EVIDENCE, f"{step.action}: a diagnostic only reads"
        registry.get(step.action)
    remedy = [s.action for s in skill.spec.steps if s.action]
    assert remedy and all(a not in EVIDENCE for a in remedy)
    for action in remedy:
        registry.get(action)
    assert skill.spec.steps[-1].kind == "verify"
    for trigger in skill.spec.triggers:
        if trigger.kind == "memory_high":  # the resources monitor's f"{metric}_high"
            assert trigger.source == "resources"
        elif trigger.kind in EMITTED:
            source = Path(str(EMITTED[trigger.kind].__file__))
            assert f'"{trigger.kind}"' in source.read_text(), (trigger.kind, source)
        else:  # a log rule's kind: the playbook names it (docs/STARTER.md gives the rule)
            assert trigger.kind == "nginx_upstream_error"


def test_docs_starter_has_a_section_for_each_skill() -> None:
    text = (REPO / "docs" / "STARTER.md").read_text()
    section = text.split("## Web, containers, Kubernetes and Railway", 1)[1]
    for name in ASKING + RAILWAY:
        assert f"`{name}`" in section, name


def test_the_leak_skill_fires_on_the_trend_s_prediction_not_on_a_level() -> None:
    """The messages are the resources monitor's own (tests/monitors/test_resources.py)."""
    [trigger] = load_skill(REPO / "skills" / "docker-memory-leak-restart").spec.triggers
    trend = "memory 386 MiB of 1024 MiB (38 %), rising 2.0 MB/s: reaches the limit in 6 min"
    level = "memory 480 MiB of 512 MiB (94 %): above 90 % on 3 checks"
    fields: dict[str, Any] = {"source": "resources", "kind": "memory_high", "target": "app"}
    assert trigger.match(new_incident(message=trend, **fields)) is not None
    assert trigger.match(new_incident(message=level, **fields)) is None
