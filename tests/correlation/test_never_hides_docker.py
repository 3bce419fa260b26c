"""Correlation never hides a fault (issue #40 item 2), under a real `guard run` on the real
Docker engine: a full disk logged in two wordings is one incident, and a real OOM kill of the
same service while that incident is open and firing is a new incident, asked."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.correlation.shop import write_playbook
from tests.helpers.agent import guard_process, incidents, setup_docker_home, show, wait_for

pytestmark = pytest.mark.docker

WORDINGS = (
    "{t} ERROR could not write /var/lib/app/q{n}.db: No space left on device\n",
    "{t} ERROR disk /var/lib/app full, dropping the upload of order {n}\n",
)
MEMORY_HOG = "x=a; while :; do x=$x$x; done"  # doubles a string until the kernel kills it


def test_an_oom_kill_while_a_full_disk_is_open_is_a_new_incident_asked(
    home: GuardHome, containers: Any
) -> None:
    labels = setup_docker_home(home, triage={"cause_lead": "2s"})
    log = home.root / "app.log"
    log.write_text("")
    ((key, value),) = labels.items()
    write_playbook(
        home,
        "app",
        [
            {
                "id": "app-container",
                "type": "docker",
                "service": "app",
                "selector": {"label": f"{key}={value}"},
                "every": "1h",
            },
            {
                "id": "app-log",
                "type": "logfile",
                "service": "app",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "disk_full", "pattern": "No space left on device|disk .* full"}],
            },
        ],
        services={"app": {}},
    )
    stop = threading.Event()

    def disk_full() -> None:  # the app keeps failing to write: the disk incident keeps firing
        n = 0
        while not stop.wait(0.5):
            n += 1
            with open(log, "a") as f:
                f.write(WORDINGS[n % 2].format(t=time.strftime("%Y-%m-%dT%H:%M:%SZ"), n=n))

    writer = threading.Thread(target=disk_full, daemon=True)
    with guard_process(home):
        writer.start()
        try:
            disk = wait_for(
                lambda: next((i for i in incidents(home) if i["kind"] == "disk_full"), None),
                60,
                "the full disk's incident",
            )
            wait_for(lambda: show(home, disk["id"])["count"] >= 4, 30, "both wordings counted")
            # older than cause_lead (2 s) when the kill comes, as the test means it: four lines
            # can be counted 1.5 s after the first, and a CI run's kill came 2 s after the
            # disk's incident began, in its lead (then its symptom, rightly joined)
            time.sleep(2.5)
            hog = containers.run("hog", MEMORY_HOG, labels=labels, mem_limit="16m")
            hog.wait(timeout=60)
            hog.reload()
            assert hog.attrs["State"]["OOMKilled"], hog.attrs["State"]
            oom = wait_for(
                lambda: next(
                    (i for i in incidents(home) if i["kind"] == "container_oom_killed"), None
                ),
                60,
                "the OOM kill's own incident",
            )
            asked = wait_for(
                lambda: show(home, oom["id"])["state"] == "awaiting_human", 60, "its question"
            )
        finally:
            stop.set()
            writer.join(timeout=5)
    assert asked
    everything = incidents(home)
    assert sorted(i["kind"] for i in everything) == ["container_oom_killed", "disk_full"]
    disk_view = show(home, disk["id"])
    assert disk_view["related"] == [] and disk_view["count"] >= 4  # two wordings, one incident
    assert oom["target"] == hog.name and show(home, oom["id"])["related"] == []
