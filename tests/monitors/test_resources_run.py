"""A real ``guard run`` with a ``type: resources`` playbook: a python3 process leaking 2 MB/s
in a container under a 64 MiB limit is an incident, with the predicted time to the limit in its
message, opened before the kernel OOM-kills the container."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.helpers.agent import find, running_guard, wait_for
from tests.monitors.test_resources import LEAK, stack  # noqa: F401  (the fixture)

pytestmark = pytest.mark.docker


def watch_memory(home: GuardHome, name: str) -> None:
    """A ``type: resources`` playbook on the containers whose name holds ``name``: memory
    above 95 % on 3 checks, or the trend of the last 20 s reaching the limit within 10 min."""
    home.playbook(
        "app",
        [
            {
                "id": "app-resources",
                "type": "resources",
                "selector": {"name": name},
                "every": "1s",
                "memory": {"above": "95%", "for": 3},
                "trend": {"window": "20s", "within": "10m"},
            }
        ],
    )


def test_guard_run_opens_a_leak_s_incident_before_the_oom_kill(home: GuardHome, stack: Any) -> None:  # noqa: F811
    name = f"run-leak-{time.time_ns()}"  # the selector's substring of the container's name
    watch_memory(home, name)
    with running_guard(home):
        leak = stack(
            name,
            ["python3", "-c", LEAK],
            mem_limit="64m",
            memswap_limit="64m",
        )
        inc = wait_for(lambda: find(home, kind="memory_high"), 40, "the memory_high incident")
        leak.reload()
        assert leak.status == "running", "the incident came after the kill"
        assert inc["source"] == "resources" and inc["target"] == leak.name
        assert "rising" in inc["message"] and "reaches the limit in" in inc["message"], inc
        wait_for(lambda: leak.reload() or leak.status != "running", 90, "the OOM kill")
        state = leak.attrs["State"]
        assert state["OOMKilled"], state
        killed = datetime.fromisoformat(state["FinishedAt"][:26] + "+00:00")
        opened = datetime.fromisoformat(inc["opened_at"])
        print(f"opened {inc['opened_at']}: {inc['message']}; OOM-killed {state['FinishedAt']}")
        assert (killed - opened).total_seconds() > 5
