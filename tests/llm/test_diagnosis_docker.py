"""What the issue asks to see, on the real Docker engine and a real `guard run`: an incident no
skill matches; the model runs a command in the Docker sandbox and reads its output; it
proposes a fix; nothing runs until `guard approve ID`; then the fix verifies and is learned
(a git commit naming the model); the export holds it, and validates against the schemas."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from guard.skills.library import load_skill
from guard.util.commandtext import digest, short
from tests.fakes.model import ModelServer, call
from tests.helpers.agent import (
    REPO,
    db_rows,
    find,
    guard_process,
    setup_docker_home,
    show,
    wait_for,
)

pytestmark = pytest.mark.docker


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Iterator[ModelServer]:
    s = ModelServer(request.param)
    yield s
    s.close()


def schema(name: str) -> dict[str, object]:
    return json.loads((REPO / "docs" / name).read_text())


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_proposal_from_a_sandboxed_investigation_is_approved_verified_and_learned(
    home, containers, server: ModelServer
) -> None:
    labels = setup_docker_home(home, llm=server.config())
    victim = containers.run("victim", "sleep 600", labels=labels)
    server.script = [
        call("sandbox_run", command="echo probe-$((6*7)); id -u"),
        call(
            "propose_remedy",
            fix=f"docker.restart {victim.name}",
            reason="the container exited; a restart brings it back",
            confidence=0.8,
        ),
    ]
    with guard_process(home):
        victim.kill()
        inc = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"), 120, "a question"
        )
        assert server.refusals == []
        second = json.dumps(server.requests[1]["messages"])
        assert "probe-42" in second and "65534" in second  # ran in the sandbox, as nobody
        shown = show(home, inc["id"])
        assert shown["proposal"] == {
            "fix": f"docker.restart {victim.name}",
            "reason": "the container exited; a restart brings it back",
            "confidence": 0.8,
            "model": f"{server.kind}:scripted-1",
        }
        assert shown["details"]["options"][0] == "proposal"
        victim.reload()
        assert victim.status == "exited"  # nothing ran before a human approved
        assert db_rows(home, "select count(*) from remediation_run") == [(0,)]
        text = home.cli("incidents", "show", str(inc["id"])).stdout
        bound = short(digest(f"docker.restart {victim.name}"))
        assert f"guard approve {inc['id']} --digest {bound}` runs exactly this" in text

        approved = home.cli("approve", str(inc["id"]), "--digest", bound)
        assert f"docker.restart {victim.name}" in approved.stderr  # the command, printed whole
        assert "cured incident" in approved.stdout and "saved as skill learned-" in approved.stdout
        done = show(home, inc["id"])
        assert done["state"] == "resolved"
        victim.reload()
        assert victim.status == "running"
    skill = load_skill(home.root / "skills" / done["details"]["learned_skill"])
    assert skill.spec.learned_from["proposed_by"] == f"model {server.kind}:scripted-1"
    log = subprocess.run(
        ["git", "log", "-1", "--format=%H%n%B"],
        cwd=home.root / "skills",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert log.startswith(done["details"]["skill_commit"])
    assert f"proposed by model {server.kind}:scripted-1" in log

    out = home.root / "out" / "all.jsonl"
    home.cli("trajectories", "export", "--out", str(out))
    (record,) = lines(out)
    jsonschema.validate(record, schema("trajectory.schema.json"))
    assert record["outcome"]["human_decision"] == "approved_proposal"
    assert record["outcome"]["verified"] is True
    assert record["outcome"]["skill"] == done["details"]["learned_skill"]
    assert record["tool_stats"]["sandbox_run"] == {"count": 1, "success": 1, "failure": 0}
    verified = home.root / "out" / "verified.jsonl"
    home.cli("trajectories", "export", "--out", str(verified), "--only-verified")
    assert len(lines(verified)) == 1
    share = home.root / "out" / "share.jsonl"
    home.cli("trajectories", "export", "--out", str(share), "--format", "sharegpt")
    (conv,) = lines(share)
    jsonschema.validate(conv, schema("trajectory-sharegpt.schema.json"))
    assert conv["completed"] is True
    assert lines(home.root / "out" / "share.failed.jsonl") == []
