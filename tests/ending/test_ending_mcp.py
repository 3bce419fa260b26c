"""People end incidents over MCP as from the shell (issue #40, item 3): ``resolve``, ``mute``
(``for``), ``unmute``, ``silence`` and ``silences`` on a real ``guard run`` over HTTP, with the
SDK's own client. Each works for an operator's token, is refused to a viewer's (naming the role),
and is audited as the CLI's are; a bad matcher is refused with the CLI's own words; a silence
made while a matching incident is already asked mutes that one too."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.conftest import GuardHome
from tests.ending.test_ending_run import FULL, setup_log_home, timeline, write
from tests.helpers.agent import db_rows, incidents, running_guard, show, wait_for
from tests.mcp.helpers import Transcript, http_session, unfenced
from tests.webui.helpers import cli_token, console_url

ENDING = ("resolve", "mute", "unmute", "silence", "silences")
REFUSED = "refused: needs operator; you are viewer"


def args_of(tool: str, incident_id: int) -> dict[str, Any]:
    """Arguments that would do something, had the caller the role."""
    if tool == "silence":
        return {"matchers": ["service=api"], "for": "1h"}
    if tool == "silences":
        return {}
    return {"incident_id": incident_id}


def test_an_operator_ends_incidents_over_mcp_and_a_viewer_is_refused(home: GuardHome) -> None:
    log = setup_log_home(home)
    said = Transcript()
    with running_guard(home) as (_, out):
        ops, viewer = cli_token(home, "ops-bot", "operator"), cli_token(home, "eve", "viewer")
        address = console_url(out) + "/mcp"
        write(log, FULL[0])
        (inc,) = wait_for(lambda: incidents(home), 20, "the incident")
        n = int(inc["id"])
        wait_for(lambda: timeline(home, n, "asked_human"), 30, "a question")
        bad = home.cli("silence", "service", "--for", "1h", check=False)

        async def steps() -> None:
            async with http_session(address, viewer) as eve, http_session(address, ops) as op:
                listed = {t.name for t in (await op.list_tools()).tools}
                assert set(ENDING) <= listed
                for tool in ENDING:
                    text, error = await said.call(eve, tool, **args_of(tool, n))
                    assert error and text == REFUSED, (tool, text)
                assert show(home, n)["state"] == "awaiting_human"  # the viewer changed nothing

                muted = await said.ok(op, "mute", incident_id=n, **{"for": "30m"})
                assert f"muted {log} for 30m" in muted, muted
                assert show(home, n)["state"] == "muted"
                unmuted = await said.ok(op, "unmute", incident_id=n)
                assert f"unmuted {log}" in unmuted, unmuted
                wait_for(lambda: len(timeline(home, n, "asked_human")) == 2, 30, "asked again")

                text, error = await said.call(op, "silence", matchers=["service"], **{"for": "1h"})
                assert error and f"error: {text}" == bad.stderr.strip(), (text, bad.stderr)
                made = await said.ok(
                    op,
                    "silence",
                    matchers=["service=api", "kind=disk_full"],
                    comment="disk cleanup",
                    **{"for": "1h"},
                )
                assert made.startswith("silence #1 (service=api kind=disk_full) until "), made
                assert "(1h): matching incidents are recorded" in made
                # the question already asked is silenced too
                wait_for(lambda: show(home, n)["state"] == "muted", 10, "the asked one silenced")
                assert show(home, n)["details"]["silenced"]["silence"] == 1

                (live,) = json.loads(unfenced(await said.ok(op, "silences"), "silences"))
                assert live["id"] == 1 and live["matchers"] == "service=api kind=disk_full"
                assert (live["by"], live["comment"], live["ended_at"]) == (
                    "token:ops-bot",
                    "disk cleanup",
                    None,
                )
                ended = unfenced(await said.ok(op, "silences", expire=1), "silences")
                assert ended == "silence #1 (service=api kind=disk_full) expired", ended
                assert json.loads(unfenced(await said.ok(op, "silences"), "silences")) == []
                text, error = await said.call(op, "silences", expire=1)
                assert error and "no live silence 1" in text, text

                resolved = await said.ok(op, "resolve", incident_id=n)
                assert resolved == (
                    f"incident #{n} resolved by token:ops-bot; it opens again if the fault "
                    "comes back"
                ), resolved
                assert show(home, n)["state"] == "resolved"

        asyncio.run(steps())
    people = db_rows(
        home, "select action, actor from audit_log where action like 'human.%' order by seq"
    )
    assert [a for a, _ in people] == [
        "human.mute",
        "human.unmute",
        "human.silence",
        "human.unsilence",
        "human.resolve",
    ], people
    assert {actor for _, actor in people} == {"token:ops-bot"}
    refused = db_rows(home, "select actor, data from audit_log where action = 'mcp.refused'")
    assert sorted(json.loads(d)["tool"] for _, d in refused) == sorted(ENDING)
    assert {actor for actor, _ in refused} == {"token:eve"}
    calls = {a for (a,) in db_rows(home, "select action from audit_log where action like 'mcp.%'")}
    assert {f"mcp.{t}" for t in ENDING} <= calls
