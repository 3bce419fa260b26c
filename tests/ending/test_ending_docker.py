"""A container log rule's incident ends when its lines stop, not because the container runs
(issue #40, item 3): the container running says nothing about the bug still throwing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
import yaml

from tests.conftest import GuardHome
from tests.helpers.agent import guard_process, incidents, setup_docker_home, show, wait_for


@pytest.mark.docker
def test_a_running_container_does_not_end_its_log_rule_incident(
    home: GuardHome, containers: Any
) -> None:
    labels = setup_docker_home(home)
    path = home.playbooks / "containers.yaml"
    book = yaml.safe_load(path.read_text())
    book["monitors"][0].update(
        every="500ms",  # a poll sees it running twice a second
        resolve_after="3s",
        rules=[{"kind": "app_bug", "pattern": "KeyError", "group_by": "rule"}],
    )
    path.write_text(yaml.safe_dump(book, sort_keys=False))
    with guard_process(home):
        app = containers.run(
            "app",
            "sleep 1; for i in $(seq 1 12); do echo \"KeyError: 'user' $i\"; sleep 0.5; done; "
            "sleep 600",
            labels=labels,
        )
        (inc,) = wait_for(lambda: incidents(home), 30, "the log rule's incident")
        wait_for(lambda: b"'user' 12" in app.logs(), 30, "the last line")
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 30, "it to resolve")
        # when the container wrote it (the engine's stamp: a loaded machine's CLI calls may
        # take longer than resolve_after, so "not resolved yet" read now would prove nothing)
        stamp = app.logs(timestamps=True).splitlines()[-1].split(b" ", 1)[0].decode()
        whole, _, fraction = stamp.rstrip("Z").partition(".")
        last_line = datetime.fromisoformat(f"{whole}.{fraction[:6].ljust(6, '0')}+00:00")
    shown = show(home, inc["id"])
    moves = [t for t in shown["timeline"] if t["type"] == "state_changed"]
    assert [t["message"] for t in moves if t["to_state"] == "resolved"] == [
        "no matching line for 3s (resolve_after)"
    ], moves
    assert shown["count"] == 12
    resolved = datetime.fromisoformat(shown["resolved_at"])
    assert (resolved - last_line).total_seconds() >= 2.0  # its lines stopped, then 3 s
