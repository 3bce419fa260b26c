"""An approval runs only the text it was shown (in process, local sandbox, scripted models): a
padded proposal is refused back to the model and the human is told why; a proposal that
changed after it was shown, or that no human could read whole, does not run on approval."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlmodel import select

from guard.agent.tools import Proposal
from guard.incidents.commands import queue_command
from guard.notify.base import HumanRequest, SkillOption
from guard.notify.console import ConsoleNotifier
from guard.store.models import ConversationMessage, HumanCommand, RemediationRun
from guard.util.commandtext import digest, oddities, short
from tests.fakes.model import ModelServer, call
from tests.helpers.agent import as_cli
from tests.helpers.console import console_worker
from tests.llm.test_investigation import make_agent, timeline, tool_results

pytestmark = pytest.mark.unit

PADDED = "echo restarting payment-worker" + " " * 3600 + "; echo HIDDEN-TAIL-RAN"


def runs(agent: object) -> list[RemediationRun]:
    with agent.db.session() as s:  # type: ignore[attr-defined]
        return list(s.exec(select(RemediationRun)).all())


def outcome(agent: object, cmd: HumanCommand) -> tuple[str, str]:
    with agent.db.session() as s:  # type: ignore[attr-defined]
        row = s.get(HumanCommand, cmd.id)
        assert row is not None
        return str(row.status), row.outcome


def test_oddities_name_what_hides_text() -> None:
    assert oddities("echo restarting payment-worker") == []
    assert oddities("docker.restart api") == []
    long, run = oddities(PADDED)
    assert "3,652 characters long, over the limit of 1,000" in long
    assert "a run of 3,600 spaces or tabs at character 31, which hides" in run
    assert any("control character (U+001B)" in o for o in oddities("echo ok\x1b[2K; rm -rf /x"))
    assert any("direction-changing" in o for o in oddities("echo \u202eoor\u202c"))
    assert any("unusual space" in o for o in oddities("echo\u00a0x"))
    assert any("1,001 characters" in o for o in oddities("x" * 1001))
    assert any("blank lines" in o for o in oddities("echo a\n\n\n\necho b"))


async def test_a_padded_proposal_is_refused_and_the_human_told_why(
    tmp_path: Path, openai_server: ModelServer
) -> None:
    openai_server.script = [
        call("propose_remedy", fix=PADDED, reason="restart it", confidence=0.9),
    ]
    agent, notifier, inc_id = make_agent(tmp_path, openai_server.config())
    try:
        await agent.handle(inc_id)
        (refusal,) = tool_results(openai_server)
        assert "refused as a proposal: it is 3,652 characters long" in refusal
        assert "a run of 3,600 spaces or tabs at character 31" in refusal
        (request,) = notifier.asked
        assert [o.name for o in request.options] == []  # nothing to tap
        assert "a run of 3,600 spaces or tabs at character 31" in request.evidence
        assert "HIDDEN-TAIL-RAN" not in request.evidence
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None and "proposal" not in inc.details
        cmd = queue_command(agent.db, incident_id=inc_id, verb="approve", **as_cli("ann"))
        await agent.process_command(cmd)
        assert runs(agent) == []
    finally:
        await agent.shutdown()


async def test_a_proposal_changed_after_it_was_shown_does_not_run(
    tmp_path: Path, openai_server: ModelServer
) -> None:
    openai_server.script = [
        call("propose_remedy", fix="echo first-proposal", reason="r", confidence=0.5),
    ]
    agent, notifier, inc_id = make_agent(tmp_path, openai_server.config())
    try:
        await agent.handle(inc_id)
        (request,) = notifier.asked
        shown = request.options[0]
        assert (shown.command, shown.digest) == ("echo first-proposal", digest(shown.command))
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None
        # what `guard diagnose` does when a new investigation proposes something else
        changed = {**inc.details["proposal"], "fix": "echo SECOND-PROPOSAL-RAN"}
        agent.lifecycle.move(inc_id, inc.state, "a model proposed a fix", proposal=changed)

        stale = queue_command(
            agent.db, incident_id=inc_id, verb="approve", **as_cli("ann"), fix=shown.digest
        )
        await agent.process_command(stale)
        status, text = outcome(agent, stale)
        assert status == "failed" and "the proposal changed after it was shown" in text
        assert "nothing ran" in text
        unbound = queue_command(agent.db, incident_id=inc_id, verb="approve", **as_cli("bob"))
        await agent.process_command(unbound)
        assert outcome(agent, unbound)[0] == "failed"
        assert runs(agent) == []
        assert len(timeline(agent, inc_id, "approval_refused")) == 2

        fresh = queue_command(  # the new text, approved as shown: it runs
            agent.db,
            incident_id=inc_id,
            verb="approve",
            **as_cli("ann"),
            fix=digest("echo SECOND-PROPOSAL-RAN"),
        )
        await agent.process_command(fresh)
        (run,) = runs(agent)
        assert run.fix == "echo SECOND-PROPOSAL-RAN"
    finally:
        await agent.shutdown()


async def test_a_proposal_no_human_could_read_is_neither_offered_nor_run(
    tmp_path: Path, openai_server: ModelServer
) -> None:
    """Past the model's tools (a surface that comes later hands one in): the asker drops it,
    and an approval of it, even bound to its very digest, runs nothing."""
    agent, notifier, inc_id = make_agent(tmp_path, None)
    try:
        await agent.parts.asker.ask(
            inc_id, [], "", "No skill matches.", proposal=Proposal(PADDED, "r", 0.9, "m:x")
        )
        (request,) = notifier.asked
        assert request.options == []
        assert "will not offer: it is 3,652 characters long" in request.question
        assert "a run of 3,600 spaces" in request.question
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None
        agent.lifecycle.move(inc_id, inc.state, "forced", proposal={"fix": PADDED})
        cmd = queue_command(
            agent.db,
            incident_id=inc_id,
            verb="approve",
            **as_cli("ann"),
            skill="proposal",
            fix=digest(PADDED),
        )
        await agent.process_command(cmd)
        status, text = outcome(agent, cmd)
        assert status == "failed" and "not a command a human can read whole" in text
        assert runs(agent) == []
    finally:
        await agent.shutdown()


def test_the_console_shows_the_command_whole_with_the_digest_to_approve_it(tmp_path: Path) -> None:
    agent, _, inc_id = make_agent(tmp_path, None)
    command = "echo " + "step; " * 150  # 905 characters: over any one-line preview
    console = ConsoleNotifier(agent.db)
    ok = SkillOption("proposal", "proposed by m:x", "a" * 22, command, digest(command))
    odd = SkillOption("proposal", "proposed by m:x", "b" * 22, PADDED, digest(PADDED))

    async def ask() -> None:
        async with console_worker(agent.db):  # the console's outbox worker writes them
            for option in (ok, odd):
                await console.ask(HumanRequest(inc_id, "down", "error", "api", 1, "", [option]))

    asyncio.run(ask())
    with agent.db.session() as s:
        shown, refused = [m.text for m in s.exec(select(ConversationMessage)).all()]
    assert f"guard approve {inc_id} --skill proposal --digest {short(digest(command))}" in shown
    assert f"    | {command}" in shown
    assert "guard approve" not in refused and "not offered (it is 3,652 characters" in refused
    asyncio.run(agent.shutdown())
