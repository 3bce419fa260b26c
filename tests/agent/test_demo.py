"""`guard demo` runs start to finish on the real engine and leaves nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

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
            all=True, ignore_removed=True, filters={"label": "guard.demo"}
        )
        == []
    )
    assert not [i for i in docker_client.images.list() if "guard-demo-victim:latest" in i.tags]
    assert set(tmp.glob("guard-demo-*")) == before
    mine = {"label": ["guard.sandbox=1", f"guard.pid={demo.pid}"]}  # other tests run alongside
    left = docker_client.containers.list(all=True, ignore_removed=True, filters=mine)
    assert left == []  # no diagnostics sandbox outlives the demo either
