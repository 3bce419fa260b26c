"""SSH to a real OpenSSH host set up from `guard host setup`'s output: what the host allows
runs, everything else is refused there; a bad host is a clear error within its timeout."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.hosts import allowlist as commands
from guard.hosts.ssh import HostError, HostKeyChanged, asyncssh, connect, run
from tests.conftest import GuardHome
from tests.helpers.hosts import HOST, HostBox, add_host, configure, install

pytestmark = pytest.mark.docker


def act(home: GuardHome, text: str) -> Any:
    action, args = ActionRegistry().parse(text)
    return asyncio.run(action.run(args, ActionContext(home.settings())))


def test_what_the_host_allows_runs(home: GuardHome, test_host: HostBox) -> None:
    configure(home, test_host)
    df = act(home, "host.df")
    assert df.ok and "Filesystem" in df.message and df.details["host"] == HOST
    test_host.sh("echo nginx says hello | systemd-cat -t nginx")
    journal = act(home, "host.journal nginx.service 20 since='-1h'")
    assert journal.ok and journal.details["exit_status"] == 0  # init scripts log no unit
    status = act(home, "host.systemctl status nginx.service on web1")
    assert status.ok and "nginx is running" in status.message
    test_host.sh("echo junk > /var/log/app/api.log")
    assert act(home, "host.truncate /var/log/app/api.log").ok is False  # guard may not write yet
    test_host.sh("chown guard /var/log/app/api.log")
    assert act(home, "host.truncate /var/log/app/api.log").ok
    assert test_host.sh("stat -c %s /var/log/app/api.log").strip() == "0"
    check = home.cli("host", "check", HOST)
    assert "everything Guard's config and skills need of web1 is allowed" in check.stdout
    assert "/usr/bin/sudo -n /usr/bin/systemctl --no-pager restart nginx.service" in check.stdout

    skill = home.root / "skills" / "restart-redis"  # a skill asks for more than the host allows
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: restart-redis\ndescription: Restarts redis on web1. Use when it hangs.\n"
        "---\n\n# restart-redis\n\n## When to use\n\nRedis hangs.\n\n## Procedure\n\n"
        "1. Restart it.\n\n## Pitfalls\n\n- None.\n\n## Verification\n\nThe check passes.\n"
    )
    step = {"action": "host.systemctl", "args": {"verb": "restart", "unit": "redis.service"}}
    spec = {"triggers": [{"source": "http", "kind": "http_status"}], "steps": [step]}
    (skill / "skill.yaml").write_text(yaml.safe_dump({**spec, "trust": "approval"}))
    check = home.cli("host", "check", HOST, check=False)
    restart = "/usr/bin/sudo -n /usr/bin/systemctl --no-pager restart redis.service"
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"skill restart-redis needs: {restart} (missing)" in check.stdout
    assert f"not allowed by web1 but in its config or skills (1):\n  {restart}" in check.stdout
    assert restart in home.cli("host", "setup", HOST).stdout  # setup would allow it


def test_the_same_key_can_do_nothing_else(home: GuardHome, test_host: HostBox) -> None:
    configure(home, test_host)
    settings = home.settings()
    test_host.sh("echo secret-ish > /var/log/app/keep.log")
    for argv in (
        ["/usr/bin/systemctl", "stop", "ssh"],
        ["/usr/bin/sudo", "-n", "/usr/bin/systemctl", "stop", "ssh.service"],
        ["bash", "-c", "id"],
        ["/usr/bin/cat", "/etc/shadow"],
        ["/usr/bin/truncate", "-s", "0", "/etc/passwd"],
    ):
        ran = asyncio.run(run(settings, HOST, argv))
        assert ran.refused and ran.exit_status == 126, (argv, ran)
    outside = act(home, "host.truncate /etc/passwd")
    assert not outside.ok and outside.details["refused"]
    assert outside.message.startswith("refused by host web1 (guard-exec)")
    stop = act(home, "host.systemctl stop ssh.service")
    assert not stop.ok and stop.details["refused"]
    assert int(test_host.sh("stat -c %s /etc/passwd")) > 0
    assert "sshd" in test_host.sh("ps -eo comm")

    async def port_forward() -> int:
        async with connect(settings, HOST) as conn:
            with pytest.raises(asyncssh.ChannelOpenError) as refused:
                await conn.open_connection("127.0.0.1", 80)  # nginx, on the host's loopback
            return int(refused.value.code)

    assert asyncio.run(port_forward()) == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED

    async def agent_forwarded() -> str:
        host = settings.hosts[HOST]
        async with asyncssh.connect(
            host.address,
            username=host.user,
            client_keys=[
                asyncssh.import_private_key(
                    (home.root / "data" / "secrets" / "web1_ssh").read_text()
                )
            ],
            known_hosts=([asyncssh.import_public_key(host.host_key)], [], []),
            agent_path=str(home.root / "agent.sock"),  # never used: sshd refuses the forward
            agent_forwarding=True,
            config=[],
        ) as conn:
            done = await conn.run("/usr/bin/env")
            return str(done.stdout)

    env = asyncio.run(agent_forwarded())  # asked for, and refused by restrict
    assert "SSH_CONNECTION=" in env and "SSH_AUTH_SOCK" not in env


def test_a_changed_host_key_is_refused(home: GuardHome, test_host: HostBox) -> None:
    configure(home, test_host)
    assert act(home, "host.free").ok
    test_host.sh("rm /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null && /etc/init.d/ssh restart")
    with pytest.raises(ActionError, match=r"host web1 .* presented a host key other than"):
        act(home, "host.free")
    with pytest.raises(HostKeyChanged):
        asyncio.run(run(home.settings(), HOST, ["/usr/bin/df", "-P", "-h"]))


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_bad_hosts_and_bad_commands_end_within_their_timeouts(
    home: GuardHome, test_host: HostBox, silent_server: int
) -> None:
    configure(home, test_host)
    t0 = time.monotonic()
    flood = act(home, "host.run flood")
    assert flood.details["cut"] and "[output cut at 65536 bytes]" in flood.message
    assert time.monotonic() - t0 < 5
    for text, says in (
        ("host.run nap", "did not finish within 5 s"),
        ("host.systemctl restart hang.service", "did not finish within 5 s"),
    ):
        t0 = time.monotonic()
        with pytest.raises(ActionError, match=says):
            act(home, text)
        assert time.monotonic() - t0 < 8

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    settings = home.settings()
    for where, says in ((port, "unreachable"), (silent_server, "did not answer within 3 s")):
        moved = settings.model_copy(deep=True)
        moved.hosts[HOST].address, moved.hosts[HOST].port = "127.0.0.1", where
        t0 = time.monotonic()
        with pytest.raises(HostError, match=f"host web1 \\(127.0.0.1:{where}\\) {says}"):
            asyncio.run(run(moved, HOST, ["/usr/bin/df"]))
        assert time.monotonic() - t0 < 5


def test_a_host_behind_a_jump_host(home: GuardHome, test_host: HostBox, docker_client: Any) -> None:
    """db1 accepts Guard's key only from the jump host, which may forward to db1:22 alone."""
    db1 = HostBox(docker_client, f"guard-test-{os.getpid()}-db1", network=test_host.network)
    try:
        add_host(home, test_host, "web1")
        add_host(home, db1, "db1", jump="web1", from_address=test_host.address)
        assert 'restrict,port-forwarding,permitopen="' + db1.address + ':22"' in install(
            home, test_host, "web1"
        )
        install(home, db1, "db1")
        result = act(home, "host.systemctl status nginx.service on db1")
        assert result.ok and result.details["host"] == "db1"
        direct = home.settings().model_copy(deep=True)
        direct.hosts["db1"].jump = None  # straight from Guard: db1's from= refuses the key
        with pytest.raises(HostError, match="refused Guard's key"):
            asyncio.run(run(direct, "db1", commands.DF))

        async def elsewhere() -> int:
            async with connect(home.settings(), "web1") as conn:
                with pytest.raises(asyncssh.ChannelOpenError) as refused:
                    await conn.open_connection(test_host.address, 80)  # not db1:22
                return int(refused.value.code)

        assert asyncio.run(elsewhere()) == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED
    finally:
        db1.remove()
