"""Railway answers of an unexpected shape (issue 13, finding 9): each is a ``RailwayError``
naming the field (so a ``monitor_error`` signal that says what changed), or is read leniently
where that is safe; the monitor keeps running."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import select

from guard.app import Guard
from guard.config import RailwaySettings
from guard.domain.exceptions import RailwayError
from guard.railway.client import RailwayClient
from guard.railway.models import DeploymentStatus
from guard.store.models import Incident
from tests.fakes.railway import Fault, RailwayServer, railway_config, serve_railway

PLAYBOOK = """\
name: railway
monitors:
  - id: api-railway
    type: railway
    service: api
    environment: production
    every: 30s
    rules:
      - kind: boom
        pattern: "boom"
"""


@pytest.fixture
def railway() -> Iterator[RailwayServer]:
    yield from serve_railway()


def _client(server: RailwayServer) -> RailwayClient:
    return RailwayClient(RailwaySettings(**railway_config(server)))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"errors": "boom, as a string", "data": None}, "boom, as a string"),
        ({"errors": [1, None, "x"], "data": None}, "1; None; x"),
        (
            {
                "data": {
                    "project": {"id": "p", "name": "shop", "services": {"edges": [{"cursor": "c"}]}}
                }
            },
            "project.services.edges[0]: unexpected answer: field node is missing",
        ),
        (
            {"data": {"project": {"id": "p", "name": "shop", "services": {"edges": "nope"}}}},
            "project.services.edges is str, not a list",
        ),
        ({"data": {"project": "gone"}}, "project is str, not an object"),
        ({"data": {}}, "field project is missing"),
        ({"data": {"project": {"name": "shop"}}}, "field project.id is missing"),
    ],
)
async def test_a_bad_shape_names_the_field(
    railway: RailwayServer, body: dict[str, Any], field: str
) -> None:
    railway.faults.append(Fault(body=body))
    client = _client(railway)
    try:
        with pytest.raises(RailwayError) as exc:
            await client.project("p")
    finally:
        await client.aclose()
    assert field in str(exc.value)


async def test_new_status_values_and_null_messages_are_read(railway: RailwayServer) -> None:
    client = _client(railway)
    try:
        railway.faults.append(
            Fault(
                body={
                    "data": {
                        "serviceInstance": {
                            "latestDeployment": {
                                "id": "d1",
                                "status": "HIBERNATING",
                                "createdAt": "2026-12-01T00:00:00Z",
                            }
                        }
                    }
                }
            )
        )
        deployment = await client.latest_deployment("e", "s")
        assert deployment is not None and deployment.status is DeploymentStatus.UNKNOWN
        railway.faults.append(
            Fault(
                body={
                    "data": {
                        "deploymentLogs": [
                            {"timestamp": "2026-12-01T00:00:00.000000000Z", "message": None}
                        ]
                    }
                }
            )
        )
        (line,) = await client.deployment_logs("d1")
        assert line.message == ""
        railway.faults.append(Fault(body={"data": {"deploymentLogs": [{"message": "x"}]}}))
        with pytest.raises(RailwayError, match=r"deploymentLogs\[0\]\.timestamp"):
            await client.deployment_logs("d1")
    finally:
        await client.aclose()


async def test_the_monitor_reports_the_field_and_keeps_running(
    home: Any, railway: RailwayServer
) -> None:
    railway.state.deploy(status="SUCCESS")
    home.write_config({"railway": railway_config(railway)})
    (home.playbooks / "railway.yaml").write_text(PLAYBOOK)
    railway.faults.extend(
        [
            Fault(),
            Fault(
                body={
                    "data": {
                        "serviceInstance": {
                            "latestDeployment": {
                                "id": "d",
                                "status": "SUCCESS",
                                "createdAt": "yesterday",
                            }
                        }
                    }
                }
            ),
        ]
    )
    await Guard(home.settings(), home.playbooks_loaded()).run_once()  # must not raise
    with home.database().session() as s:
        (err,) = s.exec(select(Incident).where(Incident.kind == "monitor_error")).all()
    assert "serviceInstance.latestDeployment.createdAt" in err.message, err.message
    events = await Guard(home.settings(), home.playbooks_loaded()).run_once()
    assert [e.type for e in events] == ["resolved"]


HOSTILE_PLAYBOOK = PLAYBOOK.replace(
    "    every: 30s", "    start: beginning\n    every: 30s"
).replace(
    """      - kind: boom
        pattern: "boom"
""",
    """      - kind: slow_timeout
        pattern: ".*ERROR.*timeout"
        group_by: template
      - kind: nested
        pattern: "(a+)+$"
""",
)


@pytest.mark.serial  # it measures the event loop's worst stall: alone, not beside 3 other workers
async def test_hostile_railway_log_lines_do_not_stall_the_loop(
    home: Any, railway: RailwayServer
) -> None:
    from tests.monitors.test_hostile_matching import max_stall

    dep = railway.state.deploy(status="SUCCESS")
    for message in [
        "é " + "ERROR " * 1400,
        "a" * 40 + "!",
        "ERROR timeout " + "x" * 100_000,
        "ERROR upstream timeout",
    ]:
        railway.state.log(dep["id"], message)
    home.write_config({"railway": railway_config(railway)})
    (home.playbooks / "railway.yaml").write_text(HOSTILE_PLAYBOOK)
    _, stall = await max_stall(Guard(home.settings(), home.playbooks_loaded()).run_once())
    assert stall < 0.5, f"the event loop stalled {stall:.2f}s"
    with home.database().session() as s:
        found = s.exec(select(Incident).where(Incident.kind == "slow_timeout")).all()
    assert sorted(i.count for i in found) == [
        1,
        1,
    ]  # the plain line; the long one, cut (by template)
    cut = next(i for i in found if "x" * 100 in i.message)
    assert cut.details["line_cut_at_chars"] == 65536
    with home.database().session() as s:
        assert not s.exec(select(Incident).where(Incident.kind == "nested")).all()
