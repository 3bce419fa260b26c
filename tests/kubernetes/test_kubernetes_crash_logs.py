"""A crash's last lines: the previous container instance's ``tailLines`` on the incident (its
``evidence``), in the question to the human, in the model's ``recent_logs``; ``k8s.logs``.

Against the local API server's log endpoint (tests/fakes/kube_logs.py); two tests run a real
``guard run`` with the Telegram and model test servers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from tests.fakes.kube import KubeServer, deployment, pod
from tests.fakes.kube_logs import crash, start_again, started, write_log
from tests.fakes.model import ModelServer, call
from tests.helpers.agent import show, wait_for
from tests.helpers.kube_logs import POD, RULES, following, log_requests, monitor_for, stop
from tests.helpers.telegram import configure, guard_run, incident_message
from tests.kubernetes.test_kubernetes import kube_home, wait_until


@contextmanager
def investigated(
    home: Any, kube: KubeServer, tg: Any, *, lines: int, **monitor: Any
) -> Iterator[ModelServer]:
    """``guard run`` (Telegram, a scripted model that calls ``recent_logs {lines}`` then
    proposes) over the ``shop-pods`` kubernetes monitor; yields the model server."""
    model = ModelServer("openai")
    model.script = [
        call("recent_logs", lines=lines),
        call("propose_remedy", fix="echo look", reason="logs", confidence=0.4),
    ]
    try:
        configure(home, tg, kubernetes={"kubeconfig": str(kube.kubeconfig(home.root))})
        config = yaml.safe_load(home.config.read_text())
        home.write_config({**config, "llm": model.config()})
        spec = {"id": "shop-pods", "type": "kubernetes", "namespace": "shop", "selector": "app=api"}
        home.playbook("k8s", [{**spec, **monitor}])
        yield model
    finally:
        model.close()


def tool_result(model: ModelServer) -> str:
    """What the one tool the model called (``recent_logs``) returned to it (fenced: its first
    line opens the untrusted-data fence)."""
    [result] = {
        str(m["content"]) for r in model.requests for m in r["messages"] if m["role"] == "tool"
    }
    return result


async def test_a_crash_looping_pod_carries_the_previous_containers_last_lines(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    lines = [f"INFO step {i}" for i in range(40)] + ["FATAL cannot reach the database"]
    write_log(kube.state, "shop", POD, "app", *lines)
    crash(kube.state, "shop", POD, "app")
    monitor = monitor_for(home, kube, previous_tail=10)
    seen, task = await following(monitor)
    try:
        [sig] = await wait_until(lambda: seen.signals("k8s_crash_loop_back_off"), within=30)
        assert sig.details["evidence"].splitlines() == lines[-10:]
        kept = sig.details["previous_logs"]
        assert kept["pod"] == POD and kept["container"] == "app" and kept["lines"] == 10
        [req] = log_requests(kube, previous="true")
        assert req.query["tailLines"] == "10" and req.query["container"] == "app"
        # The next signal about the same dead instance does not ask again...
        start_again(kube.state, "shop", POD, "app")
        write_log(kube.state, "shop", POD, "app", "INFO up again", "FATAL still no database")
        crash(kube.state, "shop", POD, "app")
        found = await wait_until(
            lambda: [s for s in seen.signals("k8s_crash_loop_back_off") if s is not sig],
            within=30,
        )
        # ...a new instance that died is asked for once, and its lines are its own.
        assert found[-1].details["evidence"].splitlines() == [
            "INFO up again",
            "FATAL still no database",
        ]
        assert len(log_requests(kube, previous="true")) == 2
    finally:
        await stop(task, monitor)


def test_guard_run_shows_a_crash_loops_last_lines_to_the_human_and_the_model(home, kube, tg):
    """Real ``guard run``: the incident the crash opens keeps the dead instance's last lines
    (``incidents show --json``), the Telegram question shows them (cut to fit), and the
    model's ``recent_logs`` returns them; a password in them is redacted everywhere."""
    kube.state.add_deployment(deployment("api"))
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    lines = [f"INFO warming cache {i}" for i in range(60)] + [
        "FATAL cannot connect: postgres://shop:s3cr3t-pass-81x@db:5432/shop",
        "FATAL giving up after 5 attempts",
    ]
    write_log(kube.state, "shop", POD, "app", *lines)
    crash(kube.state, "shop", POD, "app")
    with investigated(home, kube, tg, lines=5, previous_tail=20) as model:
        with guard_run(home):
            message = incident_message(tg, 1, within=60)
        shown = show(home, 1)
        assert shown["kind"] == "k8s_crash_loop_back_off" and shown["target"] == "shop/api"
        redacted = "FATAL cannot connect: postgres://shop:[REDACTED:url-password]@db:5432/shop"
        kept = shown["details"]["previous_logs"]
        assert kept["lines"] == 20 and kept["text"].splitlines()[-2] == redacted
        evidence = shown["details"]["evidence"].splitlines()
        assert (
            evidence[0] == f"$ last 20 lines of the previous instance of container app in pod {POD}"
        )
        assert evidence[1:21] == [*lines[-20:-2], redacted, lines[-1]]
        assert "FATAL giving up after 5 attempts" in message["text"]
        assert "s3cr3t-pass-81x" not in message["text"] + json.dumps(shown) + model.sent
        # the model asked recent_logs for 5 lines: the last 5 of the kept ones
        head = f"$ last 5 lines of the previous instance of container app in pod {POD}"
        assert tool_result(model).splitlines()[1:7] == [head, *lines[-5:-2], redacted, lines[-1]]
        [req] = log_requests(kube, previous="true")
        assert req.query["tailLines"] == "20"


def test_recent_logs_of_a_log_rule_incident_reads_the_containers_last_lines(home, kube, tg):
    """No crash, so nothing was kept: the model's ``recent_logs`` reads the pod container's
    last lines through ``k8s.logs`` (``tailLines``), timestamps off and redacted."""
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    with investigated(home, kube, tg, lines=3, logs=RULES) as model:
        with guard_run(home):
            wait_for(lambda: log_requests(kube, follow="true"), 60, "the log stream")
            write_log(
                kube.state,
                "shop",
                POD,
                "app",
                "INFO pool at 19/20",
                "WARN token=ghp_0123456789abcdefghijABCDEFGHIJ012345 refreshed",
                "INFO pool at 20/20",
                "ERROR payment gateway timeout",
            )
            incident_message(tg, 1, within=60)
        [req] = [r for r in log_requests(kube) if r.query.get("follow") != "true"]
        assert req.query["tailLines"] == "3" and req.query["container"] == "app"
        result = tool_result(model)
        lines = result.splitlines()
        at = lines.index("INFO pool at 20/20")
        assert lines[at - 1] == "WARN token=[REDACTED:github-token] refreshed"
        assert lines[at + 1] == "ERROR payment gateway timeout"
        assert "INFO pool at 19/20" not in result  # three lines, as asked
        assert "ghp_0123456789abcdefghij" not in model.sent
        assert show(home, 1)["target"] == f"shop/{POD}/app"


async def test_k8s_logs_reads_a_named_container_and_says_what_is_missing(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app"), started("sidecar")]))
    write_log(kube.state, "shop", POD, "sidecar", "one", "two", "three")
    settings = kube_home(home, kube)
    logs = ActionRegistry().get("k8s.logs")
    incident = {"details": {"namespace": "shop", "pod": POD}}
    with pytest.raises(ActionError, match=r"k8s\.logs needs a container"):
        await logs.run({}, ActionContext(settings, incident=incident))
    out = await logs.run({"container": "sidecar", "tail": 2}, ActionContext(settings, incident))
    assert out.ok and out.message == "two\nthree" and out.details["lines"] == 2
    with pytest.raises(ActionError, match=r'404 pods "gone" not found'):
        await logs.run({"pod": "gone", "container": "app"}, ActionContext(settings, incident))
