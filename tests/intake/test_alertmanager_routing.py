"""Label routing meets a real Alertmanager: ``routes:`` matched on the labels Prometheus put on
the alert, not on a payload written by hand.

Prometheus scrapes a container whose target carries ``team: payments``; the container stops,
``VictimDown`` fires with that label, Alertmanager delivers it to Guard's hook, and the route
``labels: {team: payments}`` pages the payments webhook. A route for another team pages
nobody, although it comes first and its severity matches.
"""

from __future__ import annotations

import secrets
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import GuardHome
from tests.fakes import prometheus as prom_peers
from tests.fakes.webhook_receiver import SECRET, receiving
from tests.helpers.agent import find, running_guard, setup_docker_home, show, wait_for

pytestmark = pytest.mark.docker


def test_alertmanager_labels_route_the_page_to_the_team_that_owns_the_target(
    home: GuardHome, docker_client: Any, busybox_image: str, tmp_path: Path
) -> None:
    token = secrets.token_hex(16)
    intake = prom_peers.doc_block("guard-intake")["intake"]
    intake[0]["token"] = token
    name = f"guard-victim-{uuid.uuid4().hex[:8]}"
    with receiving() as payments, receiving() as search:
        setup_docker_home(
            home,
            intake=intake,
            notifiers={
                "webhook": {
                    "payments": {"url": payments.url, "hmac_secret": SECRET},
                    "search": {"url": search.url, "hmac_secret": SECRET},
                }
            },
            routes=[
                {"match": {"labels": {"team": "search"}}, "notify": ["webhook:search"]},
                {
                    "match": {"labels": {"team": ["payments", "billing"]}},
                    "notify": ["webhook:payments"],
                },
            ],
        )
        port = yaml.safe_load(home.config.read_text())["http_port"]
        hook = f"http://127.0.0.1:{port}/hooks/{intake[0]['id']}"
        labels = {"container": name, "team": "payments"}
        with (
            prom_peers.victim(docker_client, busybox_image, name, {}) as (box, target),
            prom_peers.alertmanager(tmp_path / "am", hook, token) as am,
            running_guard(home),
            prom_peers.prometheus(tmp_path / "prom", target, labels, am.url) as prom,
        ):
            alert = prom_peers.fire(home, prom, am, box)
            assert alert["labels"]["team"] == "payments"  # Prometheus's label, not ours
            incident = wait_for(
                lambda: find(home, source="alertmanager", kind=prom_peers.RULE), 60, "the incident"
            )
            assert show(home, incident["id"])["details"]["alert"]["labels"]["team"] == "payments"

            (page,) = payments.wait_for(1)
            assert page["action"] == "trigger"
            assert page["incident"]["id"] == incident["id"]
            assert search.requests == []  # the other team's route did not match

            box.start()  # the alert resolves in Alertmanager, the incident and its page too
            wait_for(
                lambda: show(home, incident["id"])["state"] == "resolved", 90, "the resolution"
            )
            resolve = payments.wait_for(2)[1]
            assert resolve["action"] == "resolve" and resolve["incident"]["id"] == incident["id"]
        assert search.requests == []
