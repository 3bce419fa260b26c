"""``services:`` and ``service:`` in playbooks: validated across files, each problem named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from guard.playbooks.loader import check_playbooks
from guard.playbooks.services import service_map
from tests.conftest import GuardHome

pytestmark = pytest.mark.unit


def write(folder: Path, name: str, book: dict) -> None:
    (folder / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, **book}, sort_keys=False))


def http(monitor: str, service: str | None = None) -> dict:
    spec = {"id": monitor, "type": "http", "url": f"http://{monitor}:8080/healthz"}
    return spec | ({"service": service} if service else {})


def test_the_issues_shape_loads_and_maps_monitors_to_services(tmp_path: Path):
    write(
        tmp_path,
        "shop",
        {
            "services": {"shop": {"depends_on": ["shop-db"]}},
            "monitors": [
                {
                    "id": "shop-container",
                    "type": "docker",
                    "service": "shop",
                    "selector": {"name": "shop"},
                },
                http("shop-http", "shop"),
            ],
        },
    )
    write(tmp_path, "db", {"monitors": [http("db-http", "shop-db")]})  # watched elsewhere
    books, problems = check_playbooks(tmp_path)
    assert problems == {}
    services = service_map(books)
    assert services.service("shop-container") == "shop"
    assert services.service("db-http") == "shop-db"
    assert services.dependencies("shop") == {"shop-db"}
    assert services.related("shop-db", "shop") and not services.related("shop", "other")


def test_an_unknown_dependency_is_named_with_its_file_and_field(tmp_path: Path):
    write(
        tmp_path,
        "shop",
        {"services": {"shop": {"depends_on": ["shop-bd"]}}, "monitors": [http("h", "shop")]},
    )
    _, problems = check_playbooks(tmp_path)
    (found,) = problems[tmp_path / "shop.yaml"]
    assert found.endswith(
        "shop.yaml: services.shop.depends_on[0]: unknown service 'shop-bd' (declare it under "
        "services: or name it on a monitor's service:)"
    )


def test_a_cycle_across_playbooks_is_an_error_said_once(tmp_path: Path):
    write(tmp_path, "a", {"services": {"api": {"depends_on": ["db"]}}, "monitors": []})
    write(
        tmp_path,
        "b",
        {"services": {"db": {"depends_on": ["cache"]}, "cache": {"depends_on": ["api"]}}},
    )
    _, problems = check_playbooks(tmp_path)
    found = [p for ps in problems.values() for p in ps]
    assert len(found) == 1
    assert "a.yaml: services.api.depends_on: dependency cycle api -> db -> cache -> api" in found[0]


def test_a_service_declared_twice_and_a_bad_name_are_errors(tmp_path: Path):
    write(tmp_path, "a", {"services": {"api": {}}})
    write(tmp_path, "b", {"services": {"api": {"depends_on": []}}})
    write(tmp_path, "c", {"monitors": [http("x", "not a name")]})
    _, problems = check_playbooks(tmp_path)
    assert (
        "b.yaml: services.api: service 'api' is declared twice (also in"
        in problems[tmp_path / "b.yaml"][0]
    )
    assert "c.yaml: monitors[0].service:" in problems[tmp_path / "c.yaml"][0]


async def test_guard_correlates_by_the_playbooks_it_runs_and_a_reload_changes_that(
    home: GuardHome,
) -> None:
    from guard.app import Guard
    from guard.playbooks import load_playbooks

    home.playbook("web", [http("web")])
    guard = Guard(home.settings(), home.playbooks_loaded())
    try:
        assert guard.triage.correlation.services.service("web") is None
        write(
            home.playbooks,
            "web",
            {"services": {"web": {"depends_on": ["db"]}}, "monitors": [http("web", "web")]},
        )
        write(home.playbooks, "db", {"monitors": [http("db", "db")]})
        await guard.apply_playbooks(load_playbooks(home.playbooks))
        services = guard.triage.correlation.services
        assert services.service("web") == "web" and services.dependencies("web") == {"db"}
    finally:
        await guard.close()
