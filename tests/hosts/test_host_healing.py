"""The host healed end to end, by a real `guard run`: nginx on a real OpenSSH host is killed,
the HTTP check fails, a human's `host.systemctl restart nginx.service on web1` heals it
(verified by that check) and is learned as a skill naming the host; the next kill is healed by
the skill with no question asked."""

from __future__ import annotations

from typing import Any

import pytest

from guard.skills.library import load_skill
from tests.conftest import GuardHome
from tests.helpers.agent import (
    db_rows,
    find,
    guard_process,
    incidents,
    past_flap_window,
    setup_docker_home,
    show,
    wait_for,
)
from tests.helpers.hosts import HostBox, configure

pytestmark = pytest.mark.docker


def test_a_humans_host_fix_is_verified_learned_and_reused(
    home: GuardHome, test_host: HostBox, busybox_image: str
) -> None:
    setup_docker_home(home)
    configure(home, test_host)
    url = f"http://{test_host.address}/"
    home.playbook("web", [{"id": "web-http", "type": "http", "url": url, "every": "1s"}])
    with guard_process(home):
        test_host.sh("pkill -KILL nginx")
        first = wait_for(lambda: find(home, target=url, state="awaiting_human"), 60, "a question")
        fix = ["host.systemctl", "restart", "nginx.service", "on", "web1"]
        reply = home.cli("reply", str(first["id"]), "--", *fix)
        assert "cured incident" in reply.stdout and "saved as skill learned-" in reply.stdout
        done = show(home, first["id"])
        assert done["state"] == "resolved"
        learned = load_skill(home.root / "skills" / done["details"]["learned_skill"])
        step = learned.spec.steps[0]
        assert step.action == "host.systemctl"
        assert step.args == {"verb": "restart", "unit": "nginx.service", "host": "web1"}
        assert "nginx" in test_host.sh("ps -eo comm")

        wait_for(lambda: past_flap_window(home, first["id"]), 30, "the flap window to pass")
        test_host.sh("pkill -KILL nginx")

        def second() -> Any:
            return next(
                (
                    i
                    for i in incidents(home)
                    if i["id"] != first["id"] and i["target"] == url and i["state"] == "resolved"
                ),
                None,
            )

        healed = wait_for(second, 60, "the learned skill to heal the second incident")
        timeline = show(home, healed["id"])["timeline"]
        assert not [t for t in timeline if t["type"] == "asked_human"]
    audited = db_rows(home, "select data from audit_log where action = 'action.host.systemctl'")
    assert len(audited) == 2  # the human's fix, then the skill
    for (data,) in audited:
        assert '"ok": true' in data and "host web1: /usr/bin/sudo -n /usr/bin/systemctl" in data
