"""One fault, one incident: a real container killed, watched three ways, under `guard run`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.correlation.shop import monitors, shop, write_playbook
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import (
    db_rows,
    guard_process,
    incidents,
    setup_docker_home,
    show,
    tune_skill,
    wait_for,
)
from tests.helpers.telegram import CHAT, configure

pytestmark = pytest.mark.docker

THREE_WAYS = {"http_status", "http_unreachable", "upstream_refused", "bad_gateway"}


def related(home: GuardHome, incident_id: int) -> list[dict[str, Any]]:
    return list(show(home, incident_id)["related"])


def joined_all(home: GuardHome, incident_id: int, monitors_: set[str], kinds: int) -> bool:
    """Every monitor of ``monitors_`` is one related signal, ``kinds`` kinds between them."""
    found = related(home, incident_id)
    monitors_seen = [r["monitor"] for r in found]
    return (
        sorted(monitors_seen) == sorted(monitors_) and sum(len(r["kinds"]) for r in found) == kinds
    )


def test_a_container_killed_and_watched_three_ways_is_one_incident_healed_by_a_trusted_skill(
    home: GuardHome, docker_client: Any, busybox_image: str
) -> None:
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(
        home,
        "docker-start-exited",
        steps=[
            {"wait": "4s"},  # the other checks see the fault and join before the restart
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"verify": {"timeout": "60s", "interval": "1s", "quiet": "3s"}},
        ],
    )
    pay_labels = {"guard.test.watch": labels["guard.test.watch"] + "-pay"}
    with (
        shop(home, docker_client, busybox_image, "shop", labels) as s,
        shop(home, docker_client, busybox_image, "pay", pay_labels) as p,
    ):
        write_playbook(
            home,
            "shop",
            [*monitors(s, labels), *monitors(p, pay_labels, log=False)],
            services={"shop": {}, "pay": {}},
        )
        with guard_process(home):
            s.container.kill()  # two unrelated services fail at once
            p.container.kill()
            shop_inc = wait_for(
                lambda: next((i for i in incidents(home) if i["target"] == s.container.name), None),
                60,
                "the shop's incident",
            )
            wait_for(
                lambda: joined_all(home, shop_inc["id"], {"shop-http", "shop-log"}, 3),
                60,
                "the HTTP check and both log lines to join the container's incident",
            )
            done = wait_for(
                lambda: (
                    [i for i in incidents(home) if i["state"] == "resolved"]
                    if len([i for i in incidents(home) if i["state"] == "resolved"]) == 2
                    else None
                ),
                120,
                "the trusted skill to heal both services",
            )
        everything = incidents(home)
        assert len(everything) == 2, everything  # 2 services: 2 incidents, not 7
        assert {i["target"] for i in done} == {s.container.name, p.container.name}
        shop_view = show(home, shop_inc["id"])
        assert shop_view["kind"] == "container_exited"
        assert shop_view["details"]["service"] == "shop"
        # one fault, three monitors: one incident with two related signals (the HTTP check,
        # and the log, whose two different lines are one related signal of two kinds)
        assert len(shop_view["related"]) == 2
        (log,) = [r for r in shop_view["related"] if r["monitor"] == "shop-log"]
        assert set(log["kinds"]) == {"upstream_refused", "bad_gateway"} and len(log["ids"]) == 2
        kinds = {k for r in shop_view["related"] for k in r["kinds"]}
        assert kinds <= THREE_WAYS
        assert all(
            r["count"] >= 1 and r["first_seen"] <= r["last_seen"]
            for r in related(home, shop_inc["id"])
        )
        pay_inc = next(i for i in everything if i["target"] == p.container.name)
        assert [r["monitor"] for r in related(home, pay_inc["id"])] == ["pay-http"]
        # the remedy targeted the root; its verification re-ran all three checks
        verified = db_rows(
            home,
            "select s.result from agent_step s join remediation_run r on r.id = s.run_id "
            f"where s.kind = 'verify' and r.incident_id = {shop_inc['id']} and s.status = 'done'",
        )
        assert verified and "and 2 related check(s) pass" in json.loads(verified[-1][0])["summary"]
        runs = db_rows(home, "select incident_id, skill, target, status from remediation_run")
        assert sorted(runs) == sorted(
            [
                (shop_inc["id"], "docker-start-exited", s.container.name, "verified"),
                (pay_inc["id"], "docker-start-exited", p.container.name, "verified"),
            ]
        )
        s.container.reload()
        assert s.container.status == "running"


def test_one_fault_asks_one_question_edited_as_its_signals_join(
    home: GuardHome, docker_client: Any, busybox_image: str, tg: TelegramServer
) -> None:
    configure(home, tg, triage={"flap_window": "1s"}, agent={"verify_timeout": "40s"})
    (home.root / "skills").mkdir()  # the cure is learned there
    labels = {"guard.test.watch": f"tg-{id(home)}"}
    with shop(home, docker_client, busybox_image, "shop", labels) as s:
        write_playbook(home, "shop", monitors(s, labels), services={"shop": {}})
        with guard_process(home):
            s.container.kill()
            # the root is whichever check saw the fault first (on a loaded machine the HTTP
            # check can beat the container's exit event); a human fixes it either way
            inc = wait_for(lambda: next(iter(incidents(home)), None), 60, "the incident")
            others = {"shop-container", "shop-http", "shop-log"} - {inc["monitor_id"]}
            wait_for(
                lambda: joined_all(home, inc["id"], others, 3),
                60,
                "the other checks to join",
            )
            message = wait_for(
                lambda: next(
                    (m for m in tg.bot_messages("Related signals (2)") if m["chat"]["id"] == CHAT),
                    None,
                ),
                60,
                "the question to name its two related signals",
            )
            assert f"Incident #{inc['id']}" in message["text"]
            assert "reply_markup" in message  # still a live question
            questions = [m for m in tg.bot_messages("Incident #") if "reply_to_message" not in m]
            assert len(questions) == 1, questions  # 1 incident, 1 message
            assert len(incidents(home)) == 1
            assert len(tg.sent("sendMessage")) == 1  # the question; joins edit it in place
            fixed = home.cli("reply", str(inc["id"]), "--", "docker.start", s.container.name)
            assert "cured incident" in fixed.stdout
        assert show(home, inc["id"])["state"] == "resolved"
        questions = [m for m in tg.bot_messages("Incident #") if "reply_to_message" not in m]
        assert len(questions) == 1 and len(incidents(home)) == 1
