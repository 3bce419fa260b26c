"""compose.up against the real engine with docker compose: it starts a service of the project's
own compose file, and refuses a service the file does not define, or no file at all."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.config import Settings

pytestmark = pytest.mark.docker


def project(tmp_path: Path, image: str) -> tuple[Settings, str]:
    name = f"guardtest{os.getpid()}compose"
    file = tmp_path / "compose.yaml"
    service = {"image": image, "command": ["sleep", "300"], "network_mode": "none"}
    file.write_text(yaml.safe_dump({"services": {"app": service, "worker": service}}))
    return Settings.model_validate({"compose": {"file": str(file), "project": name}}), name


async def test_compose_up_starts_a_service_of_the_projects_file(
    tmp_path, docker_client, busybox_image
):
    settings, name = project(tmp_path, busybox_image)
    ctx = ActionContext(settings)
    try:
        done = await ActionRegistry().get("compose.up").run({"service": "app"}, ctx)
        running = docker_client.containers.list(
            filters={"label": [f"com.docker.compose.project={name}"]}
        )
        assert done.ok, done.message
        assert [c.labels["com.docker.compose.service"] for c in running] == ["app"]
        assert done.details == {"service": "app", "exit_code": 0, "timed_out": False}
    finally:
        for c in docker_client.containers.list(
            all=True, filters={"label": [f"com.docker.compose.project={name}"]}
        ):
            with contextlib.suppress(Exception):
                c.remove(force=True)


async def test_compose_up_refuses_a_service_not_in_the_file(tmp_path, busybox_image):
    settings, _ = project(tmp_path, busybox_image)
    up: Any = ActionRegistry().get("compose.up")
    with pytest.raises(ActionError, match=r"refuses service 'db'.*services: app, worker"):
        await up.run({"service": "db"}, ActionContext(settings))
    with pytest.raises(ActionError, match=r"set compose.file in guard.yaml"):
        await up.run({"service": "app"}, ActionContext(Settings()))
    with pytest.raises(ActionError, match="needs a service name"):
        await up.run({"service": "-f /etc/other.yaml"}, ActionContext(settings))
