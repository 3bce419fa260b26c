"""The memory starter skills against their real faults, each under a real ``guard run`` with
containers of the stack image (python3, built offline):

- ``docker-oom-raise-memory``: a process that needs ~37 MiB under a 32 MiB limit is OOM-killed
  by the kernel; the question shows the limit and the kill; approved, the limit is 1.5 times
  higher and the container runs, verified by the docker check that fired;
- ``docker-memory-leak-restart``: a process leaking 2 MB/s under a 128 MiB limit; the resources
  monitor's trend predicts the limit; approved, the container restarts before the kill,
  verified by the resources check."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.helpers.agent import find, running_guard, setup_docker_home, show, wait_for
from tests.monitors.test_resources import LEAK, stack  # noqa: F401  (the fixture)
from tests.monitors.test_resources_run import watch_memory

pytestmark = [pytest.mark.docker, pytest.mark.timeout(240)]

STOPS = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
"""As a service stops on SIGTERM (python3 as PID 1 would ignore it: a 10 s grace)."""
NEEDS_37_MIB = "import time\nheld = b'x' * 36_000_000\ntime.sleep(600)\n"  # with python: ~37 MiB


def asked_then_approved(home: GuardHome, kind: str, skill: str) -> dict[str, Any]:
    """The ``kind`` incident asks a human; approved with ``skill``, it resolves by it. The
    incident as the question showed it (its evidence)."""
    inc = wait_for(lambda: find(home, kind=kind, state="awaiting_human"), 90, f"{kind} asked")
    shown = show(home, inc["id"])
    home.cli("approve", str(inc["id"]), "--skill", skill)
    wait_for(lambda: find(home, id=inc["id"], state="resolved"), 90, f"{kind} healed")
    assert show(home, inc["id"])["details"]["resolved_by"] == skill
    return shown


def test_an_oom_killed_container_gets_a_higher_limit_once_approved(
    home: GuardHome,
    stack: Any,  # noqa: F811
) -> None:
    labels = setup_docker_home(home, skills=["docker-oom-raise-memory"])
    with running_guard(home):
        victim = stack(
            "oom",
            ["python3", "-c", NEEDS_37_MIB],
            mem_limit="32m",
            memswap_limit="32m",
            labels=labels,
        )
        shown = asked_then_approved(home, "container_oom_killed", "docker-oom-raise-memory")
        victim.reload()
        assert victim.status == "running"
        assert victim.attrs["HostConfig"]["Memory"] == 48 * 2**20
    evidence = shown["details"]["evidence"]
    assert f"container {victim.name}: exited (exit code 137, OOM-killed True" in evidence
    assert "memory limit: 32 MiB" in evidence
    print(evidence)


def test_a_leak_predicted_by_the_trend_is_restarted_before_the_kill(
    home: GuardHome,
    stack: Any,  # noqa: F811
) -> None:
    setup_docker_home(home, skills=["docker-memory-leak-restart"])
    name = f"starter-leak-{id(home)}"
    watch_memory(home, name)
    with running_guard(home):
        leak = stack(name, ["python3", "-c", STOPS + LEAK], mem_limit="128m", memswap_limit="128m")
        started = leak.attrs["State"]["StartedAt"]
        shown = asked_then_approved(home, "memory_high", "docker-memory-leak-restart")
        leak.reload()
        assert leak.status == "running" and not leak.attrs["State"]["OOMKilled"]
        assert leak.attrs["State"]["StartedAt"] != started  # restarted by the skill
    assert "reaches the limit in" in shown["message"], shown["message"]
    evidence = shown["details"]["evidence"]
    assert f"container {leak.name}: running" in evidence
    assert "memory limit: 128 MiB" in evidence and "memory now: " in evidence
    print(shown["message"], evidence, sep="\n")
