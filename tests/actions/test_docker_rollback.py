"""docker.rollback against the real engine: Guard's docker monitor sees a container deployed
on v1 and then recreated on v2 (recording v1 as its previous image in the store); the rollback
recreates it on v1 with the same configuration. Before any change was seen it is refused."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

import pytest

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.app.monitoring import MonitorRunner
from guard.domain.records import Observation
from guard.monitors.docker import DockerMonitor
from guard.playbooks.models import DockerMonitorSpec
from guard.store import images

pytestmark = pytest.mark.docker


def version_image(client: Any, base: str, repo: str, version: str) -> str:
    """``repo:version``: the base image with /tmp/version holding ``version`` (no registry)."""
    c = client.containers.run(base, ["sh", "-c", f"echo {version} > /tmp/version"], detach=True)
    try:
        c.wait(timeout=30)
        c.commit(repository=repo, tag=version, changes=[f"ENV VERSION={version}"])
    finally:
        c.remove(force=True)
    return f"{repo}:{version}"


def deploy(client: Any, image: str, name: str, networks: list[Any]) -> Any:
    """A deploy: the container on the first network, joined to the second as ``shop-app``."""
    with contextlib.suppress(Exception):
        client.containers.get(name).remove(force=True)
    c = client.containers.run(
        image,
        ["sleep", "300"],
        name=name,
        detach=True,
        network=networks[0].name,
        environment={"APP_MODE": "blue"},
        labels={"guard.test": "1", "team": "shop"},
        restart_policy={"Name": "on-failure", "MaximumRetryCount": 2},
    )
    networks[1].connect(c, aliases=["shop-app"])
    return c


async def test_rollback_recreates_the_container_on_the_image_guard_saw_before(
    home, docker_client, busybox_image
):
    prefix = f"guard-test-{os.getpid()}-rollback"
    repo = prefix.replace("-", "")
    home.write_config({})
    settings = home.settings()
    db = home.database()
    seen: list[Observation] = []

    async def put(obs: Observation) -> None:
        seen.append(obs)

    spec = DockerMonitorSpec.model_validate(
        {"id": "app", "type": "docker", "selector": {"name": prefix}, "events": False}
    )
    monitor = DockerMonitor(spec)
    runner = MonitorRunner(db, [monitor], put, asyncio.Event())
    rollback = ActionRegistry().get("docker.rollback")
    ctx = ActionContext(settings)
    networks = [
        docker_client.networks.create(f"{prefix}-{n}", driver="bridge") for n in ("front", "back")
    ]
    v1 = version_image(docker_client, busybox_image, repo, "1")
    v2 = version_image(docker_client, busybox_image, repo, "2")
    try:
        deploy(docker_client, v1, prefix, networks)
        await runner.scheduled(monitor)
        with pytest.raises(ActionError, match="no previous image recorded"):
            await rollback.run({"container": prefix}, ctx)

        deploy(docker_client, v2, prefix, networks)  # a deploy Guard did not make
        await runner.scheduled(monitor)
        with db.session() as session:
            assert images.history(session, prefix)["previous"]["ref"] == v1
        again = MonitorRunner(db, [monitor], put, asyncio.Event())  # Guard restarted
        await again.scheduled(monitor)
        with db.session() as session:
            assert images.history(session, prefix)["previous"]["ref"] == v1  # still there

        done = await rollback.run({"container": prefix}, ctx)
        after = docker_client.containers.get(prefix)
        assert done.ok and done.details["image"] == v1 and done.details["from"] == v2
        assert after.attrs["Image"] == docker_client.images.get(v1).id
        assert after.status == "running"
        assert after.exec_run(["cat", "/tmp/version"]).output.strip() == b"1"
        env = after.attrs["Config"]["Env"]
        assert "APP_MODE=blue" in env and "VERSION=1" in env and "VERSION=2" not in env
        assert after.labels["team"] == "shop"
        assert after.attrs["HostConfig"]["RestartPolicy"]["MaximumRetryCount"] == 2
        joined = after.attrs["NetworkSettings"]["Networks"]
        assert sorted(joined) == sorted(n.name for n in networks)
        assert "shop-app" in (joined[networks[1].name]["Aliases"] or [])
        await runner.scheduled(monitor)  # the rollback is a change of image too: undo it later
        with db.session() as session:
            assert images.history(session, prefix)["previous"]["ref"] == v2
        leftovers = docker_client.containers.list(all=True, filters={"name": f"{prefix}-guard"})
        assert leftovers == []
    finally:
        await monitor.close()
        for c in docker_client.containers.list(all=True, filters={"name": prefix}):
            c.remove(force=True)
        for image in (v1, v2):
            with contextlib.suppress(Exception):
                docker_client.images.remove(image, force=True)
        for network in networks:
            with contextlib.suppress(Exception):
                network.remove()
