"""Container logs on the real engine: stdout and stderr, resume exactly once, TTY, tracebacks."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from guard.domain.records import Observation, Signal
from guard.monitors.docker import DockerMonitor
from guard.playbooks.models import DockerMonitorSpec
from tests.monitors.test_multiline import go_panic, java_trace, python_trace

pytestmark = pytest.mark.docker

# The counter lives in the container's file system, so it goes on across a container restart;
# it is replaced by a rename, never truncated and rewritten: a kill between the two (a loaded
# machine) left it empty, the writer began again at 1, and those lines were printed twice.
WRITER = (
    "n=$(cat /tmp/n 2>/dev/null || echo 0); while true; do n=$((n+1)); "
    "echo $n > /tmp/n.new; mv /tmp/n.new /tmp/n; "
    'echo "ERROR out $n"; echo "ERROR err $n" >&2; sleep 0.02; done'
)


def spec(label: str, **kw: Any) -> DockerMonitorSpec:
    return DockerMonitorSpec.model_validate(
        {"id": "c", "type": "docker", "selector": {"label": label}, "every": "1h", **kw}
    )


class Following:
    """A monitor's ``follow`` in a task, with what it emitted (as triage would store it)."""

    def __init__(self, monitor: DockerMonitor) -> None:
        self.monitor, self.seen = monitor, list[Observation]()
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Following:
        async def emit(obs: Observation) -> None:
            self.seen.append(obs)

        self.task = asyncio.create_task(self.monitor.follow(emit))
        await asyncio.sleep(0.5)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()  # like SIGKILL: nothing after the last emit is kept
        await asyncio.gather(self.task, return_exceptions=True)
        await self.monitor.close()

    def state(self) -> dict[str, Any]:
        return next((o.state for o in reversed(self.seen) if o.state), {})


def counted(runs: list[Following]) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for run in runs:
        for obs in run.seen:
            for sig in (s for s in obs.signals if s.kind == "err"):  # not the events' signals
                fields = dict(sig.grouping.fields) if sig.grouping else {}
                assert sig.details["stream"] == {"out": "stdout", "err": "stderr"}[fields["s"]]
                out[(fields["s"], fields["n"])] += sig.count
    return out


def truth(container: Any) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for stream, flag in (("out", "stdout"), ("err", "stderr")):
        text = container.logs(stdout=flag == "stdout", stderr=flag == "stderr").decode()
        for line in text.splitlines():
            out[(stream, line.split()[-1])] += 1
    return out


async def test_every_line_counts_once_across_guard_kills_and_a_container_restart(containers):
    label = f"guard.watch.test={uuid.uuid4().hex[:12]}"
    rules = [{"kind": "err", "pattern": r"ERROR (?P<s>out|err) (?P<n>\d+)", "group_by": ["s", "n"]}]
    first = DockerMonitor(spec(label, rules=rules, multiline="none"))
    state = first.baseline({})
    assert state is not None
    runs = []
    async with Following(first) as run:
        writer = containers.run("writer", WRITER, labels={"guard.watch.test": label.split("=")[1]})
        await asyncio.sleep(1.5)
    runs.append(run)
    await asyncio.sleep(0.5)  # Guard is down; the container keeps writing
    second = DockerMonitor(spec(label, rules=rules, multiline="none"))
    assert second.baseline(run.state()) is None
    async with Following(second) as run2:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(writer.restart, timeout=0)
        await asyncio.sleep(1.5)
    runs.append(run2)
    await asyncio.sleep(0.3)
    third = DockerMonitor(spec(label, rules=rules, multiline="none"))
    assert third.baseline(run2.state()) is None
    async with Following(third) as run3:
        await asyncio.to_thread(writer.stop, timeout=0)
        await asyncio.sleep(1.5)
    runs.append(run3)
    got, want = counted(runs), truth(writer)
    assert len(want) > 100 and max(want.values()) == 1  # the writer printed each line once
    assert max(got.values()) == 1
    assert got == want
    assert all(len(r.seen) > 0 for r in runs)


async def printed_events(
    containers: Any, text: str, *, stderr: bool, expect: int, within: float
) -> tuple[Any, list[Signal]]:
    """A container prints ``text`` once (to stderr or stdout) under a monitor with one
    ``app_error`` rule; its container and the rule's signals once ``expect`` lines counted."""
    value = uuid.uuid4().hex[:12]
    script = text.replace("'", "'\"'\"'")
    rules = [{"kind": "app_error", "pattern": "Error|Exception|Traceback|panic"}]
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=rules))
    monitor.baseline({})
    async with Following(monitor) as run:
        c = containers.run(
            "printer",
            f"sleep 0.3; printf '%s' '{script}'{' >&2' if stderr else ''}; sleep 300",
            labels={"guard.watch.test": value},
        )
        deadline = time.monotonic() + within
        while sum(s.count for o in run.seen for s in o.signals if s.kind == "app_error") < expect:
            assert time.monotonic() < deadline, run.seen
            await asyncio.sleep(0.1)
    return c, [s for o in run.seen for s in o.signals if s.kind == "app_error"]


async def test_python_tracebacks_from_a_container_are_one_signal_per_exception(containers):
    traces = [python_trace(1, 503), python_trace(2, 502), python_trace(3, 504)]
    traces[1:1] = [python_trace(9, 0, exc="KeyError: 'sku'")] * 2
    c, found = await printed_events(containers, "".join(traces), stderr=True, expect=5, within=10)
    signals = sorted(found, key=lambda s: -s.count)
    assert [s.count for s in signals] == [3, 2]
    assert signals[0].message.startswith("clients.shop.ShopError: upstream 503")
    assert signals[1].message == "KeyError: 'sku'"
    assert signals[0].target == c.name and signals[0].details["stream"] == "stderr"
    assert signals[0].details["evidence"] == python_trace(1, 503).rstrip("\n")


async def test_java_traces_and_go_panics_from_a_container_are_one_signal_each(containers):
    text = (
        java_trace(1)
        + java_trace(2)
        + "".join(go_panic(i) + "2026/12/04 10:00:00 restarting\n" for i in (5, 7))
    )
    _, found = await printed_events(containers, text, stderr=False, expect=4, within=20)
    counts = Counter(s.message.split(":")[0] for s in found for _ in range(s.count))
    assert counts == {'Exception in thread "main" java.lang.IllegalStateException': 2, "panic": 2}
    assert len({s.grouping.content for s in found if s.grouping}) == 2  # one template each
    java = next(s for s in found if s.message.startswith("Exception"))
    go = next(s for s in found if s.message.startswith("panic"))
    assert "| Caused by: java.io.IOException: upstream answered" in java.message
    assert java.details["evidence"] == java_trace(1).rstrip("\n")
    assert go.details["evidence"] == go_panic(5).rstrip("\n")
    assert go.details["stream"] == "stdout"


async def test_a_traceback_written_slowly_is_still_one_event(containers):
    """A lone line is counted once it settled (0.2 s), not after ``flush_after``; a traceback
    whose lines come 0.5 s apart still waits for its end, and is one event."""
    value = uuid.uuid4().hex[:12]
    rules = [{"kind": "app_error", "pattern": "Error|Traceback"}]
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=rules))
    monitor.baseline({})
    lines = python_trace(1, 503).splitlines()
    slow = "; ".join(f"echo '{line}' >&2; sleep 0.5" for line in lines)
    async with Following(monitor) as run:
        containers.run("slow", f"sleep 0.3; {slow}; sleep 300", labels={"guard.watch.test": value})
        deadline = time.monotonic() + 20
        while not any(s.kind == "app_error" for o in run.seen for s in o.signals):
            assert time.monotonic() < deadline, run.seen
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)
    [signal] = [s for o in run.seen for s in o.signals if s.kind == "app_error"]
    assert signal.count == 1 and signal.details["event_lines"] == len(lines)
    assert signal.message == lines[-1]


async def test_a_tty_container_and_one_started_later_are_read(containers):
    value = uuid.uuid4().hex[:12]
    rules = [{"kind": "boom", "pattern": "BOOM", "group_by": "rule"}]
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=rules, multiline="none"))
    monitor.baseline({})
    labels = {"guard.watch.test": value}
    early = containers.run("early", "echo BOOM early; sleep 300", labels=labels, tty=True)
    await asyncio.sleep(0.5)
    async with Following(monitor) as run:
        late = containers.run("late", "echo BOOM late; sleep 300", labels=labels)
        deadline = time.monotonic() + 10
        while {s.target for o in run.seen for s in o.signals if s.kind == "boom"} != {
            early.name,
            late.name,
        }:
            assert time.monotonic() < deadline, run.seen
            await asyncio.sleep(0.1)
    by_target = {s.target: s for o in run.seen for s in o.signals if s.kind == "boom"}
    assert by_target[early.name].message == "BOOM early"  # the TTY's \r is gone
    assert by_target[late.name].details["stream"] == "stdout"


async def test_a_container_recreated_under_the_same_name_is_read_again(containers, docker_client):
    value = uuid.uuid4().hex[:12]
    rules = [{"kind": "boom", "pattern": "BOOM", "group_by": "rule"}]
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=rules, multiline="none"))
    monitor.baseline({})
    labels = {"guard.watch.test": value}
    async with Following(monitor) as run:
        old = containers.run("re", "echo BOOM first; sleep 300", labels=labels)
        await asyncio.sleep(1.0)
        await asyncio.to_thread(old.remove, force=True)  # compose up: same name, new container
        new = containers.run("re", "echo BOOM second; sleep 300", labels=labels)
        deadline = time.monotonic() + 10
        while sum(s.count for o in run.seen for s in o.signals if s.kind == "boom") < 2:
            assert time.monotonic() < deadline, run.seen
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
    booms = [s for o in run.seen for s in o.signals if s.kind == "boom"]
    assert [(s.target, s.count) for s in booms] == [(new.name, 1), (new.name, 1)]


async def test_a_10_mb_line_and_binary_output_stay_bounded(containers):
    value = uuid.uuid4().hex[:12]
    rules = [{"kind": "boom", "pattern": "BOOM", "group_by": "rule"}]
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=rules, max_line_bytes=4096))
    monitor.baseline({})
    script = (
        "sleep 0.3; printf 'BOOM huge '; head -c 10000000 /dev/zero | tr '\\0' x; echo; "
        "head -c 3000 /dev/urandom; echo; echo BOOM after; sleep 300"
    )
    async with Following(monitor) as run:
        containers.run("big", script, labels={"guard.watch.test": value})
        deadline = time.monotonic() + 20
        while sum(s.count for o in run.seen for s in o.signals if s.kind == "boom") < 2:
            assert time.monotonic() < deadline, run.seen
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # nothing more comes of the rest of the huge line
    booms = [s for o in run.seen for s in o.signals if s.kind == "boom"]
    assert sum(s.count for s in booms) == 2
    assert booms[0].message.startswith("BOOM huge xxx") and len(booms[0].message) <= 1000


async def test_guard_opens_an_incident_from_stderr_and_a_restart_counts_nothing_twice(
    home, containers
):
    from tests.monitors.test_docker_monitor import running_guard, wait_for_incident

    value = uuid.uuid4().hex[:12]
    monitor = {
        "id": "containers",
        "type": "docker",
        "selector": {"label": f"guard.watch.test={value}"},
        "every": "1h",
        "multiline": "none",
        "rules": [{"kind": "payment_failed", "pattern": "payment failed"}],
    }
    home.playbook("containers", [monitor])
    g, task = await running_guard(home)
    try:
        c = containers.run(
            "pay",
            'for i in 1 2 3; do echo "ERROR payment failed for order $i" >&2; done; sleep 300',
            labels={"guard.watch.test": value},
        )
        inc = await wait_for_incident(home, lambda i: i.kind == "payment_failed" and i.count == 3)
        assert inc.target == c.name and inc.details["stream"] == "stderr"
    finally:
        g.stop()
        await task
    g, task = await running_guard(home)  # a restart: the stored positions hold
    try:
        await asyncio.sleep(1.5)
    finally:
        g.stop()
        await task
    again = await wait_for_incident(home, lambda i: i.kind == "payment_failed")
    assert again.count == 3
    shown = home.cli("incidents", "show", str(again.id)).stdout
    assert "stream       stderr" in shown
