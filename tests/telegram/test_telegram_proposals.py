"""A model's proposal on Telegram: shown whole, or not offered; one tap runs only what was shown.

The padded proposal (`echo restarting payment-worker`, 3,600 spaces, `; echo HIDDEN-TAIL-RAN`)
used to render as `proposes echo restarting payment-worker …` with a `▶ Run proposal` button
that ran the tail. Now it is refused and the message says why; a proposal that changed after
its message was sent (`guard diagnose` again) is not run by the old button. Real `guard run`,
the local Bot API server, a scripted model.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from guard.notify.base import HumanRequest, SkillOption
from guard.notify.telegram import grouping
from guard.notify.telegram.messages import LIMIT, render_request
from guard.store.models import OutboxMessage
from guard.util.commandtext import digest, short
from tests.fakes.model import ModelServer, call
from tests.fakes.telegram import parse_html
from tests.helpers.agent import db_rows, find, show, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    answers,
    buttons,
    configure,
    guard_run,
    http_playbook,
    incident_message,
)

PADDED = "echo restarting payment-worker" + " " * 3600 + "; echo HIDDEN-TAIL-RAN"


def request(command: str, *, evidence: str = "", skills: int = 0) -> HumanRequest:
    options = [SkillOption("proposal", "proposed by m:x: r", "p" * 22, command, digest(command))]
    options += [SkillOption(f"skill-{i}", "d" * 300, f"{i:022d}") for i in range(skills)]
    return HumanRequest(7, "down", "error", "api", 1, evidence, options, "d" * 22, "m" * 22)


def run_buttons(btns: list[list[tuple[str, str]]]) -> list[str]:
    return [label for row in btns for label, _ in row if label.startswith("▶ Run")]


def test_a_command_is_shown_whole_with_its_digest_and_the_evidence_cut_instead() -> None:
    command = "curl -fsS -X POST http://api:8080/admin/flush && echo " + "flushed-" * 100
    text, btns = render_request(request(command, evidence="line <x>\n" * 3000))
    assert len(text) <= LIMIT
    parse_html(text)
    assert f"<pre>{command.replace('&', '&amp;')}</pre>" in text
    assert f"sha256 {short(digest(command))}" in text
    assert run_buttons(btns) == ["▶ Run proposal"]
    assert text.endswith("<code>guard incidents show 7</code>")  # the evidence was cut


def test_a_padded_command_is_not_offered_and_the_message_says_why() -> None:
    text, btns = render_request(request(PADDED))
    assert run_buttons(btns) == []
    assert "Not offered: " in text and "a run of 3,600 spaces" in text
    assert "HIDDEN-TAIL-RAN" not in text


def test_a_command_the_message_has_no_room_for_is_not_offered_here() -> None:
    text, btns = render_request(request("echo " + "x" * 990, skills=12))
    assert run_buttons(btns) == [f"▶ Run skill-{i}" for i in range(12)]
    assert "does not fit this message whole" in text and "guard approve 7" in text
    assert len(text) <= LIMIT


def test_a_message_that_offers_a_command_is_never_grouped() -> None:
    def ask(i: int, command: str = "") -> OutboxMessage:
        skill = HumanRequest(i, "down", "error", "api", 1, "", [SkillOption("fix", "d", "s" * 22)])
        text, btns = render_request(request(command) if command else skill)
        return OutboxMessage(
            id=i, method="send", chat_id=str(CHAT), text=text, incident_id=i,
            role="incident", buttons=btns,
        )  # fmt: skip

    plain, proposal, other = ask(1), ask(2, "docker.restart api"), ask(3)
    assert [r.id for r in grouping.batch([plain, proposal, other], plain)] == [1, 3]
    assert grouping.batch([proposal, plain, other], proposal) == [proposal]


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer("openai")
    yield server
    server.close()


def test_the_padded_proposal_is_refused_and_nothing_hidden_runs(home, tg, service, model):
    model.script = [call("propose_remedy", fix=PADDED, reason="restart", confidence=0.9)]
    http_playbook(home, service)
    configure(home, tg, llm=model.config())
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        msg = incident_message(tg, inc["id"])
        assert "a run of 3,600 spaces or tabs at character 31" in msg["text"]
        assert "HIDDEN-TAIL-RAN" not in msg["text"]
        assert not [label for label, _ in buttons(msg) if label.startswith("▶ Run")]
        assert show(home, inc["id"])["proposal"] is None
        bare = home.cli("approve", str(inc["id"]), "--wait", "30", check=False)
        assert bare.returncode == 1 and "no skill matches" in bare.stdout
    assert db_rows(home, "select count(*) from remediation_run") == [(0,)]
    assert "HIDDEN-TAIL-RAN" not in str(db_rows(home, "select result from agent_step"))


def test_a_proposal_changed_after_its_message_is_not_run_by_the_old_button(
    home, tg, service, model
):
    model.script = [
        call("propose_remedy", fix="echo first-proposal", reason="r", confidence=0.6),
        call("propose_remedy", fix="echo SECOND-PROPOSAL-RAN", reason="r2", confidence=0.7),
    ]
    http_playbook(home, service)
    configure(home, tg, llm=model.config())
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        msg = incident_message(tg, inc["id"])
        assert "Runs exactly this" in msg["text"] and "echo first-proposal" in msg["text"]
        assert f"sha256 {short(digest('echo first-proposal'))}" in msg["text"]
        run = dict(buttons(msg))["▶ Run proposal"]

        home.cli("diagnose", str(inc["id"]))  # a second investigation proposes another text
        assert show(home, inc["id"])["proposal"]["fix"] == "echo SECOND-PROPOSAL-RAN"
        old = short(digest("echo first-proposal"))  # the CLI, with what the human saw: refused
        stale = home.cli("approve", str(inc["id"]), "--digest", old, check=False)
        assert stale.returncode == 1 and "no longer the text you saw" in stale.stdout + stale.stderr
        bare = home.cli("approve", str(inc["id"]), check=False)  # binds to what was asked
        assert bare.returncode == 1 and "changed after the question" in bare.stderr

        tg.press(ADMIN, run, chat_id=CHAT, message_id=msg["message_id"])
        wait_for(lambda: answers(tg), 20, "the press to be answered")
        said = wait_for(
            lambda: [m for m in tg.bot_messages("proposal changed") if m.get("reply_to_message")],
            30,
            "the refusal in the thread",
        )
        assert "nothing ran" in said[0]["text"]
        rows = db_rows(home, "select verb, status, fix from human_command")
        assert rows == [("approve", "failed", digest("echo first-proposal"))]
    assert db_rows(home, "select count(*) from remediation_run") == [(0,)]
