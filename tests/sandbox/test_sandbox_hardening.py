"""The sandbox contains hostile commands: resource limits, filesystem, identity (real engine)."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import docker
import pytest

from guard.sandbox.docker import DockerSandbox
from tests.helpers.sandbox import assert_host_ok

pytestmark = pytest.mark.docker
DISK = "/var/lib/docker" if Path("/var/lib/docker").exists() else "/"  # where a leak would land


def _pids_sampler(
    client: docker.DockerClient, cid: str, stop: threading.Event
) -> tuple[list[int], threading.Thread]:
    """Sample the container's process count from outside (the sandbox can't fork to tell):
    the host's pids cgroup when visible, else the engine's stats."""
    seen: list[int] = []
    host = Path(f"/sys/fs/cgroup/pids/docker/{cid}/pids.current")

    def loop() -> None:
        while not stop.is_set():
            try:
                if host.exists():
                    seen.append(int(host.read_text()))
                else:
                    stats = client.api.stats(cid, stream=False)
                    seen.append(int(stats["pids_stats"]["current"]))
            except Exception:  # the container went away mid-sample
                return
            time.sleep(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return seen, thread


async def test_fork_bomb_hits_pids_limit(
    sbx: DockerSandbox, sbx_client: docker.DockerClient
) -> None:
    stop = threading.Event()
    assert sbx.container_id is not None
    seen, sampler = _pids_sampler(sbx_client, sbx.container_id, stop)
    bombed = sbx.container_id
    t0 = time.monotonic()
    result = await sbx.run("bomb() { while :; do bomb & done; }; bomb", timeout=6)
    stop.set()
    sampler.join(5)
    assert time.monotonic() - t0 < 6 + 2
    assert result.timed_out or result.exit_code != 0
    assert "can't fork" in result.stderr or "Resource temporarily unavailable" in result.stderr
    assert seen and max(seen) <= sbx.settings.pids, seen  # the limit held...
    assert max(seen) >= sbx.settings.pids - 10, seen  # ...and the bomb really reached it
    try:  # nothing of the bomb is left: its shells died out, or the container was reset
        leftover = sbx_client.api.top(bombed)["Processes"]
    except docker.errors.NotFound:
        leftover = []
    assert len(leftover) <= 2, leftover  # at most docker-init and the idle sleep
    assert_host_ok(sbx_client)
    assert (await sbx.run("echo alive")).stdout == "alive\n"  # Guard carries on (new container)


async def test_background_processes_do_not_outlive_their_command(sbx: DockerSandbox) -> None:
    first = sbx.container_id
    assert (await sbx.run("sleep 300 & echo started")).stdout == "started\n"
    assert sbx.container_id != first  # reset: nothing keeps running between commands
    assert (await sbx.run("ps -o pid,comm")).stdout.count("sleep") == 1  # only the idle sleep


async def test_memory_hog_is_oom_killed(
    sbx: DockerSandbox, sbx_client: docker.DockerClient
) -> None:
    before = sbx.container_id
    result = await sbx.run("dd if=/dev/zero of=/dev/null bs=600M count=1")
    assert result.oom_killed and result.exit_code == 137 and not result.timed_out
    assert_host_ok(sbx_client)
    again = await sbx.run("echo alive")
    assert again.ok and sbx.container_id == before  # only the hog died, the sandbox lives on


async def test_sigkill_is_not_mistaken_for_oom(sbx: DockerSandbox) -> None:
    result = await sbx.run("kill -9 $$")
    assert result.exit_code == 137 and not result.oom_killed


async def test_infinite_loop_is_killed_at_timeout(
    sbx: DockerSandbox, sbx_client: docker.DockerClient
) -> None:
    old = sbx.container_id
    t0 = time.monotonic()
    result = await sbx.run("while :; do :; done & while :; do :; done", timeout=3)
    elapsed = time.monotonic() - t0
    assert result.timed_out and result.exit_code == 124
    assert 3 <= elapsed < 3 + 2, elapsed
    with pytest.raises(docker.errors.NotFound):  # every process of it is gone with its container
        sbx_client.api.inspect_container(old)
    assert_host_ok(sbx_client)
    assert (await sbx.run("echo alive")).ok


async def test_tmp_fills_to_its_cap_and_host_disk_is_untouched(
    sbx: DockerSandbox, sbx_client: docker.DockerClient
) -> None:
    free_before = shutil.disk_usage(DISK)
    result = await sbx.run("dd if=/dev/zero of=/tmp/fill bs=1M count=200; du -m /tmp/fill")
    assert "No space left on device" in result.stderr
    used_mb = int(result.stdout.split()[0])
    assert 60 <= used_mb <= 64, result.stdout  # stopped at the 64m cap
    free_after = shutil.disk_usage(DISK)
    assert free_before.free - free_after.free < 100 * 2**20  # tmpfs: not one write hit the disk
    ws = await sbx.run("dd if=/dev/zero of=/workspace/fill bs=1M count=100")
    assert "No space left on device" in ws.stderr
    assert_host_ok(sbx_client)


async def test_root_filesystem_is_read_only(sbx: DockerSandbox) -> None:
    for target in ("/x", "/etc/passwd", "/bin/sh", "/bin/evil"):
        result = await sbx.run(f"echo evil > {target}")
        assert result.exit_code != 0, target
        assert "Read-only file system" in result.stderr or "Permission denied" in result.stderr
    assert "Read-only file system" in (await sbx.run("mkdir /new")).stderr


async def test_no_privileges_no_socket_no_host_files(
    sbx: DockerSandbox, sbx_client: docker.DockerClient, tmp_path: Path, sbx_unique: str
) -> None:
    marker = Path("/tmp") / f"guard-host-marker-{sbx_unique}"
    marker.write_text("host only")
    try:
        status = (await sbx.run("cat /proc/self/status")).stdout
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        assert int(fields["CapEff"], 16) == 0
        assert int(fields["CapPrm"], 16) == 0 and int(fields["CapBnd"], 16) == 0
        assert fields["NoNewPrivs"].strip() == "1"
        assert fields["Uid"].split()[0] != "0" and fields["Gid"].split()[0] != "0"
        assert (await sbx.run("id -u")).stdout.strip() == "65534"
        for path in ("/var/run/docker.sock", "/run/docker.sock", str(marker), str(tmp_path)):
            assert (await sbx.run(["test", "-e", path])).exit_code == 1, path
        assert "docker.sock" not in (await sbx.run("find / -name '*.sock' 2>/dev/null")).stdout
        interfaces = (await sbx.run("cat /proc/net/dev")).stdout
        assert [ln.split(":")[0].strip() for ln in interfaces.splitlines()[2:]] == ["lo"]
        su = await sbx.run("su -c id root", timeout=5)  # setuid is inert under no-new-privileges
        assert su.exit_code != 0
    finally:
        marker.unlink()
    attrs = sbx_client.api.inspect_container(sbx.container_id)
    host = attrs["HostConfig"]
    assert host["Binds"] in (None, []) and attrs["Mounts"] == []
    assert host["CapDrop"] == ["ALL"] and host["ReadonlyRootfs"] and host["NetworkMode"] == "none"
    assert host["Memory"] == host["MemorySwap"] == 256 * 2**20 and host["PidsLimit"] == 128
    assert host["NanoCpus"] == 10**9 and not host["Privileged"]


async def test_a_vanished_container_is_replaced(
    sbx: DockerSandbox, sbx_client: docker.DockerClient
) -> None:
    gone = sbx.container_id
    sbx_client.api.remove_container(gone, force=True)  # e.g. an operator's `docker rm -f`
    assert (await sbx.run("echo back")).stdout == "back\n"
    assert sbx.container_id not in (None, gone)


async def test_detection_works_without_the_hosts_cgroup_view(
    sbx: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard inside a container cannot read the host's /sys/fs/cgroup: the in-engine fallbacks
    (``cat`` of the cgroup's OOM counter inside the box, the engine's ``top``) must still work."""
    monkeypatch.setattr("guard.sandbox.docker.host_cgroup_files", lambda *a: [])
    hog = await sbx.run("dd if=/dev/zero of=/dev/null bs=600M count=1")
    assert hog.oom_killed and hog.exit_code == 137
    assert not (await sbx.run("kill -9 $$")).oom_killed
    first = sbx.container_id
    await sbx.run("sleep 300 >/dev/null 2>&1 &")
    assert sbx.container_id != first  # the leftover was seen through `top` and reset
