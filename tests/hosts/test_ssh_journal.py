"""A host's journal followed over SSH by a real `guard run` (`type: journald` with `host:`,
journalctl through guard-exec): a Python traceback a program writes to the host's journal is
one incident; Guard killed with SIGKILL and started again resumes by cursor, counting the
traceback written meanwhile once and none twice."""

from __future__ import annotations

import signal
import time

import pytest

from tests.conftest import GuardHome
from tests.helpers.agent import incidents, running_guard, setup_docker_home, wait_for
from tests.helpers.hosts import HostBox, configure

pytestmark = pytest.mark.docker

CRASH = "python3 -c 'raise ValueError(\"card declined\")' 2>&1 | systemd-cat -t pay"


def counted(home: GuardHome) -> list[int]:
    return [i["count"] for i in incidents(home) if i["source"] == "journald"]


def test_a_remote_traceback_is_one_incident_and_a_restart_resumes_by_cursor(
    home: GuardHome, test_host: HostBox, busybox_image: str
) -> None:
    setup_docker_home(home)
    configure(home, test_host)
    rule = {"kind": "python_error", "pattern": "Traceback"}
    monitor = {"id": "web1-journal", "type": "journald", "host": "web1", "every": "1h"}
    book = {**monitor, "rules": [rule], "multiline": {"preset": "python", "flush_after": "1s"}}
    home.playbook("web1", [book])
    test_host.sh("echo before Guard | systemd-cat -t pay")
    with running_guard(home) as (proc, _):
        time.sleep(3)  # following
        test_host.sh(CRASH)
        assert wait_for(lambda: counted(home) == [1] or None, 60, "one incident")
        [inc] = [i for i in incidents(home) if i["source"] == "journald"]
        assert "ValueError: card declined" in inc["message"] or "Traceback" in inc["message"]
        time.sleep(2)  # the position is stored
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    test_host.sh(CRASH)  # while Guard is down
    with running_guard(home):
        assert wait_for(lambda: counted(home) == [2] or None, 60, "the one written meanwhile")
        time.sleep(5)
        assert counted(home) == [2]  # the first traceback was not counted again
