"""`guard demo` runs start to finish on the real engine and leaves nothing behind."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from guard.app.demo import IMAGE, ensure_victim_image
from tests.conftest import REPO, GuardHome
from tests.helpers.agent import find, free_port, running_guard, wait_for

pytestmark = pytest.mark.docker


def test_demo_runs_and_cleans_up(docker_client):
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("guard-demo-*"))
    with subprocess.Popen(
        [sys.executable, "-m", "guard.cli", "demo", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as demo:
        stdout, stderr = demo.communicate(timeout=300)
    proc = subprocess.CompletedProcess(demo.args, demo.returncode, stdout, stderr)
    assert proc.returncode == 0, proc.stderr
    timings = json.loads(proc.stdout)
    assert set(timings) == {
        "detection_s",
        "kill_to_question_s",
        "human_fix_to_learned_s",
        "second_fault_mttr_s",
    }
    assert all(v > 0 for v in timings.values())
    assert "needs a human" in proc.stderr and "saved as skill learned-" in proc.stderr
    assert "healed by itself" in proc.stderr
    assert (
        docker_client.containers.list(
            all=True, ignore_removed=True, filters={"label": "guard.app.demo"}
        )
        == []
    )
    assert docker_client.images.get(IMAGE)  # kept: the quick start's victims run from it
    assert set(tmp.glob("guard-demo-*")) == before
    mine = {"label": ["guard.sandbox=1", f"guard.pid={demo.pid}"]}  # other tests run alongside
    left = docker_client.containers.list(all=True, ignore_removed=True, filters=mine)
    assert left == []  # no diagnostics sandbox outlives the demo either


def readme_victim_line() -> list[str]:
    """The quick start's ``docker run`` line, as argv."""
    quick = (REPO / "README.md").read_text().split("## Quick start")[1].split("\n## ")[0]
    (line,) = [x for x in quick.splitlines() if x.startswith("$ docker run")]
    return shlex.split(line[2:])


def test_the_quick_start_victim_runs_from_the_demo_image_and_guard_sees_it(
    home: GuardHome, docker_client
) -> None:
    """The README's own line, on Guard's defaults and the shipped demo playbook."""
    ensure_victim_image(docker_client)  # what `guard demo` leaves behind
    argv = readme_victim_line()
    assert IMAGE.split(":")[0] in argv
    name = f"victim-{os.getpid()}"  # tests run side by side: ours alone
    argv[argv.index("--name") + 1] = name
    home.write_config(
        {"playbooks_dir": str(REPO / "playbooks"), "skills_dir": None, "http_port": free_port()}
    )
    try:
        with running_guard(home) as (_, log):
            subprocess.run(argv, check=True, capture_output=True, timeout=60)
            wait_for(lambda: find(home, target=name), 60, "the victim's incident")
            wait_for(
                lambda: f"opened: container exited on {name}" in log.read_text(), 10, "the log"
            )
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
