"""docker.exec, docker.network_connect and docker.update against the real engine: each does
what it says to a real container, and refuses what it must (a shell string, ``sh -c``, a bad
policy) with a message that says how to write it instead."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.config import Settings

pytestmark = pytest.mark.docker


async def act(name: str, **args: Any) -> Any:
    return await ActionRegistry().get(name).run(args, ActionContext(Settings()))


async def test_exec_runs_argv_in_the_container_and_reports_its_exit(containers):
    c = containers.run("exec", "sleep 300")
    done = await act("docker.exec", container=c.name, argv=["sh", "-e", "/dev/null"])
    assert done.ok and done.details["exit_code"] == 0
    said = await act("docker.exec", container=c.name, argv="echo hello-from-exec")
    assert said.ok and "hello-from-exec" in said.message
    failed = await act("docker.exec", container=c.name, argv=["false"])
    assert not failed.ok and failed.details["exit_code"] == 1 and "exit 1" in failed.message


async def test_exec_refuses_a_shell_string_and_sh_c(containers):
    c = containers.run("exec-refuse", "sleep 300")
    with pytest.raises(ActionError, match=r"not a shell command.*as a list"):
        await act("docker.exec", container=c.name, argv="rm -rf /data; echo gone")
    with pytest.raises(ActionError, match="never runs sh -c"):
        await act("docker.exec", container=c.name, argv=["sh", "-c", "echo hi"])
    with pytest.raises(ActionError, match="needs argv"):
        await act("docker.exec", container=c.name)


async def test_exec_is_bounded_in_time_and_output(containers):
    c = containers.run("exec-bounds", "sleep 300")
    slow = await act("docker.exec", container=c.name, argv=["sleep", "30"], timeout="1")
    assert not slow.ok and slow.details["timed_out"] and "timed out after 1s" in slow.message
    loud = await act("docker.exec", container=c.name, argv=["head", "-c", "300000", "/dev/zero"])
    assert loud.details["bytes"] == 300000 and "output cut: 300000 bytes" in loud.message
    assert len(loud.message) < 10_000


async def test_update_changes_the_memory_limit_and_restart_policy(containers):
    c = containers.run("update", "sleep 300", mem_limit="64m")
    done = await act("docker.update", container=c.name, memory="32m", restart="on-failure:3")
    c.reload()
    host = c.attrs["HostConfig"]
    assert host["Memory"] == 32 * 2**20 and host["RestartPolicy"]["Name"] == "on-failure"
    assert host["RestartPolicy"]["MaximumRetryCount"] == 3
    assert done.ok and done.details["before"] == {"memory": 64 * 2**20, "restart": "no"}
    with pytest.raises(ActionError, match="not a policy"):
        await act("docker.update", container=c.name, restart="sometimes")
    with pytest.raises(ActionError, match="between 6m and 256g"):
        await act("docker.update", container=c.name, memory="1k")
    with pytest.raises(ActionError, match="needs memory=SIZE and/or restart=POLICY"):
        await act("docker.update", container=c.name)


async def test_network_connect_joins_a_network_it_dropped_off(docker_client, busybox_image):
    prefix = f"guard-test-{os.getpid()}-netconnect"
    home = docker_client.networks.create(f"{prefix}-home", driver="bridge")
    other = docker_client.networks.create(f"{prefix}-other", driver="bridge")
    c = docker_client.containers.run(
        busybox_image, ["sleep", "300"], name=prefix, detach=True, network=home.name
    )
    try:
        done = await act("docker.network_connect", container=c.name, network=other.name)
        c.reload()
        assert other.name in c.attrs["NetworkSettings"]["Networks"]
        assert done.ok and done.details["networks"] == sorted([home.name, other.name])
        again = await act("docker.network_connect", container=c.name, network=other.name)
        assert again.ok and "already on network" in again.message
        with pytest.raises(ActionError, match="bridge or overlay network"):
            await act("docker.network_connect", container=c.name, network="host")
    finally:
        for thing in (c, home, other):
            with contextlib.suppress(Exception):
                thing.remove(force=True) if thing is c else thing.remove()


async def test_update_multiplies_the_limit_by_a_stated_factor_and_refuses_what_it_cannot(
    containers,
):
    c = containers.run("factor", "sleep 300", mem_limit="64m", memswap_limit="64m")
    done = await act("docker.update", container=c.name, memory="x1.5")
    c.reload()
    assert c.attrs["HostConfig"]["Memory"] == c.attrs["HostConfig"]["MemorySwap"] == 96 * 2**20
    assert done.message == f"updated {c.name}: memory {64 * 2**20} -> {96 * 2**20}"
    with pytest.raises(ActionError, match="the factor must be over 1, at most 8"):
        await act("docker.update", container=c.name, memory="x0.5")
    unlimited = containers.run("unlimited", "sleep 300")
    with pytest.raises(ActionError, match="the container has none; give a size like 512m"):
        await act("docker.update", container=unlimited.name, memory="x2")


async def test_network_connect_with_a_peer_joins_the_peer_s_networks(docker_client, busybox_image):
    prefix = f"guard-test-{os.getpid()}-peer"
    net = docker_client.networks.create(f"{prefix}-net", driver="bridge")
    run = docker_client.containers.run
    proxy = run(
        busybox_image, ["sleep", "300"], name=f"{prefix}-proxy", detach=True, network=net.name
    )
    api = run(busybox_image, ["sleep", "300"], name=f"{prefix}-api", detach=True)
    lonely = run(busybox_image, ["sleep", "300"], name=f"{prefix}-lonely", detach=True)
    try:
        done = await act("docker.network_connect", container=api.name, peer=proxy.name)
        api.reload()
        assert net.name in api.attrs["NetworkSettings"]["Networks"]
        assert done.ok and done.details["network"] == [net.name]
        with pytest.raises(ActionError, match="is on no user-defined network; give network=NAME"):
            await act("docker.network_connect", container=api.name, peer=lonely.name)
    finally:
        for c in (proxy, api, lonely):
            with contextlib.suppress(Exception):
                c.remove(force=True)
        with contextlib.suppress(Exception):
            net.remove()
