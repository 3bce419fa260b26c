"""The trajectory export in process: both formats validate against the documented schemas,
``--only-verified`` keeps verified outcomes only, sharegpt splits successes from failures, and
``--since`` filters by date."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from guard.agent.investigation import Investigation
from guard.agent.tools import Proposal
from guard.agent.trajectories import TrajectoryLog
from guard.cli import app
from guard.store.db import open_database
from guard.store.models import Incident
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit
DOCS = Path(__file__).resolve().parents[2] / "docs"


def incident(db) -> Incident:
    with db.session() as s:
        return stored_incident(s)


def investigation() -> Investigation:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "sandbox_run", "arguments": '{"command": "uptime"}'},
    }
    found = Investigation(
        "openai:m",
        [
            {"role": "system", "content": "investigate"},
            {"role": "user", "content": "incident #1"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "up 1 day"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {
                            "name": "propose_remedy",
                            "arguments": '{"fix": "docker.restart api", "reason": "r", "confidence": 1}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "content": "proposal recorded"},
        ],
        proposal=Proposal("docker.restart api", "r", 1.0, "openai:m"),
        stop_reason="proposed",
        calls=2,
        prompt_tokens=100,
        completion_tokens=40,
        wall=0.5,
    )
    found.count("sandbox_run", True)
    found.count("propose_remedy", True)
    return found


def test_export_in_both_formats_validates_and_filters(tmp_path: Path) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(tmp_path / "data"),
                "playbooks_dir": str(tmp_path / "pb"),
                "skills_dir": str(tmp_path / "skills"),
            }
        )
    )
    (tmp_path / "data").mkdir()
    db = open_database(f"sqlite:///{tmp_path / 'data' / 'guard.db'}")
    log = TrajectoryLog(db)
    good, bad, plain = incident(db), incident(db), incident(db)
    log.start(good, "evidence", investigation())
    log.settle(good.id, human_decision="approved_proposal")  # type: ignore[arg-type]
    log.settle(good.id, verified=True, skill="learned-x")  # type: ignore[arg-type]
    log.start(bad, "evidence", investigation())
    log.settle(bad.id, human_decision="denied", verified=False)  # type: ignore[arg-type]
    log.start(plain, "no model here", None)
    db.dispose()

    runner = CliRunner()

    def export(out: Path, *args: str) -> None:
        result = runner.invoke(
            app, ["trajectories", "export", "--out", str(out), "--config", str(config), *args]
        )
        assert result.exit_code == 0, result.output

    rows = tmp_path / "all.jsonl"
    export(rows)
    records = [json.loads(line) for line in rows.read_text().splitlines()]
    guard_schema = json.loads((DOCS / "trajectory.schema.json").read_text())
    for r in records:
        jsonschema.validate(r, guard_schema)
    assert [r["outcome"]["verified"] for r in records] == [True, False, None]
    assert records[2]["model"] is None and records[2]["outcome"]["stop_reason"] == "no_model"
    assert records[0]["usage"]["total_tokens"] == 140

    only = tmp_path / "verified.jsonl"
    export(only, "--only-verified")
    assert [json.loads(x)["incident_id"] for x in only.read_text().splitlines()] == [good.id]

    share = tmp_path / "share.jsonl"
    export(share, "--format", "sharegpt")
    share_schema = json.loads((DOCS / "trajectory-sharegpt.schema.json").read_text())
    ok = [json.loads(x) for x in share.read_text().splitlines()]
    failed = [json.loads(x) for x in (tmp_path / "share.failed.jsonl").read_text().splitlines()]
    for r in ok + failed:
        jsonschema.validate(r, share_schema)
    assert [r["incident_id"] for r in ok] == [good.id]
    assert [r["incident_id"] for r in failed] == [bad.id, plain.id]
    turns = ok[0]["conversations"]
    assert [t["from"] for t in turns] == ["system", "human", "gpt", "tool", "gpt", "tool"]
    assert turns[2]["value"] == (
        '<tool_call>\n{"name": "sandbox_run", "arguments": {"command": "uptime"}}\n</tool_call>'
    )
    assert turns[3]["value"].startswith("<tool_response>\n") and "up 1 day" in turns[3]["value"]
    assert "<tools>" in turns[0]["value"]

    later = tmp_path / "later.jsonl"
    export(later, "--since", "2999-01-01")
    assert later.read_text() == ""
    with pytest.raises(jsonschema.ValidationError):  # the schema is not a rubber stamp
        jsonschema.validate(
            {**records[0], "outcome": {**records[0]["outcome"], "human_decision": "maybe"}},
            guard_schema,
        )
