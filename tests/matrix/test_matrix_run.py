"""Matrix end to end: a real ``guard run`` against a real Synapse and a real Docker engine. A
container dies; Guard asks in the room, the command shown whole, the buttons as reactions and
codes; a viewer's reaction is refused (and Guard says so in the room); the approver's reaction
runs the skill, which restarts the container and verifies it; the question is edited
(``m.replace``) to say so. The bot's token, read from the environment, reaches no log."""

from __future__ import annotations

from typing import Any

import pytest

from guard.notify.matrix.buttons import BUTTONS
from tests.helpers.agent import (
    db_rows,
    find,
    running_guard,
    setup_docker_home,
    show,
    tune_skill,
    wait_for,
)
from tests.matrix.conftest import Room

pytestmark = pytest.mark.docker


def configure(home: Any, room: Room, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> dict:
    monkeypatch.setenv("GUARD_MATRIX__ACCESS_TOKEN", room.bot.access_token)
    matrix = {
        "homeserver": room.hs.url,
        "user_id": room.bot.user_id,
        "room_id": room.room_id,
        "sync_timeout": "1s",
        "group_wait": "0s",
    }
    access = {"matrix": {room.ops.user_id: "approver", room.viewer.user_id: "viewer"}}
    return setup_docker_home(
        home, skills=["docker-start-exited"], matrix=matrix, access=access, **extra
    )


def bot_events(room: Room) -> list[dict[str, Any]]:
    return [e for e in room.hs.messages(room.ops, room.room_id) if e["sender"] == room.bot.user_id]


def question(room: Room, incident_id: int) -> dict[str, Any] | None:
    for e in bot_events(room):
        c = e["content"]
        if f"Incident #{incident_id}" in c.get("body", "") and BUTTONS in c:
            return e
    return None


def said(room: Room, text: str) -> list[str]:
    return [e["content"]["body"] for e in bot_events(room) if text in e["content"].get("body", "")]


def test_a_fault_is_asked_in_the_room_a_viewer_refused_and_an_approver_reaction_heals_it(
    home: Any, containers: Any, room: Room, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = configure(home, room, monkeypatch)
    tune_skill(home, "docker-start-exited", trust="approval")  # it must ask first
    victim = containers.run("victim", "sleep 600", labels=labels)
    with running_guard(home) as (_, log):
        victim.kill()
        inc = wait_for(lambda: find(home, target=victim.name, state="awaiting_human"), 60, "ask")
        asked = wait_for(lambda: question(room, inc["id"]), 60, "the question in the room")
        keys = {b["key"]: b for b in asked["content"][BUTTONS]}
        assert keys["✅"]["label"] == "▶ Run docker-start-exited" and "❌" in keys
        assert "react ✅ or reply" in asked["content"]["body"]

        room.hs.react(room.viewer, room.room_id, asked["event_id"], "✅")
        refusal = wait_for(lambda: said(room, "Refused"), 30, "the viewer's refusal")
        assert "needs approver; you are viewer" in refusal[0]
        assert show(home, inc["id"])["state"] == "awaiting_human"
        victim.reload()
        assert victim.status == "exited"

        room.hs.react(room.ops, room.room_id, asked["event_id"], "✅")
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 90, "the skill to heal")
        victim.reload()
        assert victim.status == "running"
        [(skill, by, status)] = db_rows(
            home, "select skill, approved_by, status from remediation_run"
        )
        assert (skill, by, status) == (
            "docker-start-exited",
            f"matrix:{room.ops.user_id}",
            "verified",
        )

        def closed() -> dict[str, Any] | None:
            for e in bot_events(room):
                rel = e["content"].get("m.relates_to", {})
                new = e["content"].get("m.new_content", {})
                if rel.get("event_id") == asked["event_id"] and "Resolved" in new.get("body", ""):
                    return new
            return None

        edit = wait_for(closed, 30, "the question edited to say it is resolved")
        assert BUTTONS not in edit  # nothing left to press
        assert room.bot.access_token not in log.read_text()
