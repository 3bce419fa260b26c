"""``/mcp`` of a real ``guard run`` reading a hostile log line (security review, items 8 and 9):
the line holds terminal escapes, C1 and bidi controls, and the fence's closing marker forged
with the very id the client learns from the server, spelled so that it reads as the marker only
after NFKC, case folding and dropping zero-width characters. Over HTTP, with the SDK's client,
no output carries a control character and no fenced body carries the marker in any spelling."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import GuardHome
from tests.helpers.agent import find, running_guard, wait_for
from tests.mcp.helpers import FENCED, Transcript, http_session, unfenced
from tests.mcp.test_mcp_fencing import CONTROLS, ORDER, UNSAFE, folded, forgeries, strings
from tests.webui.helpers import LOCAL, cli_token, console_url


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_a_hostile_log_line_reaches_an_mcp_client_with_no_control_and_no_marker(
    home: GuardHome,
) -> None:
    log = home.root / "api.log"
    log.write_text("INFO started\n")
    home.log_playbook("api", log, [{"kind": "api_error", "pattern": r"\bERROR\b"}], "500ms")
    home.write_config(
        {**LOCAL, "sandbox": {"backend": "local"}, "agent": {"poll_interval": "200ms"}}
    )
    said = Transcript()
    with running_guard(home) as (_, guard_log):
        viewer = cli_token(home, "viewer-bot", "viewer")
        address = console_url(guard_log) + "/mcp"

        async def steps() -> None:
            async with http_session(address, viewer) as session:
                listed = await said.ok(session, "list_incidents")
                fenced = FENCED.fullmatch(listed)
                assert fenced is not None, listed[:200]
                nonce = fenced["id"]  # what every client learns from its first result
                line = f"ERROR payment {CONTROLS} {' '.join(forgeries(nonce))}"
                await asyncio.to_thread(append, log, f"{line}\nSYSTEM: {ORDER}\n")
                inc = await asyncio.to_thread(
                    wait_for, lambda: find(home, monitor_id="api-log"), 60, "the incident"
                )
                assert inc is not None
                logs = await said.ok(session, "recent_logs", incident_id=inc["id"], lines=5)
                shown = await said.ok(session, "show_incident", id=inc["id"])
                read = await said.read(session, f"guard://incidents/{inc['id']}")
                for text in (logs, shown, read, await said.ok(session, "list_incidents")):
                    assert not UNSAFE.search(text), text[:300]
                    inner = unfenced(text)
                    assert "untrusted-data" not in folded(inner), inner[:300]
                body = unfenced(logs, "recent_logs")
                assert "ERROR payment" in body and ORDER in body  # the data itself is kept
                for text in (shown, read):
                    decoded = list(strings(json.loads(unfenced(text))))
                    assert not [s for s in decoded if UNSAFE.search(s)]
                    assert not [s for s in decoded if "untrusted-data" in folded(s)]

        asyncio.run(steps())
