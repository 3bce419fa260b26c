"""``guard diagnose ID``: run the model's investigation on an incident and print the transcript.

It proposes only: nothing is run but the read-only tools. When the incident waits for a
human, the proposal becomes the first option (``guard approve ID`` runs it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import typer

from guard.agent import policy
from guard.cli.common import (
    ConfigOption,
    database,
    echo,
    fail,
    out,
    settings_from,
    standalone_agent,
)
from guard.config import Settings
from guard.incidents.lifecycle import ANSWERABLE
from guard.store.db import Database
from guard.util.textsafe import printable


async def _investigate(settings: Settings, db: Database, incident_id: int) -> dict[str, Any]:
    async with standalone_agent(settings, db) as agent:
        inc = agent.lifecycle.load(incident_id)
        if inc is None:
            fail(f"no incident {incident_id} (see `guard incidents list`)")
        evidence = str(inc.details.get("evidence") or "")
        found = await agent.investigate(inc, evidence)
        if found is None:
            fail(f"the investigation failed; see `guard incidents show {incident_id}`")
        agent.trajectories.start(inc, evidence, found)
        if found.proposal is not None and inc.state in ANSWERABLE and inc.details.get("asked"):
            shown = [o for o in inc.details.get("options") or [] if o != policy.PROPOSAL]
            agent.lifecycle.move(
                incident_id,
                inc.state,
                "a model proposed a fix",
                proposal=found.proposal.as_dict(),
                options=[policy.PROPOSAL, *shown],
            )
        return {
            "incident_id": incident_id,
            "model": found.model,
            "stop_reason": found.stop_reason,
            "error": found.error or None,
            "proposal": found.proposal.as_dict() if found.proposal else None,
            "usage": found.usage,
            "tool_stats": found.tool_stats,
            "messages": found.messages,
        }


def diagnose(
    incident_id: int = typer.Argument(..., metavar="ID", help="Incident id."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    config: str | None = ConfigOption,
) -> None:
    """Investigate an incident with the configured model and print the transcript (proposes
    only; never runs a remedy)."""
    settings = settings_from(config)
    if not settings.llm.enabled:
        fail(
            "no model is configured: set llm.provider, llm.model (and llm.api_key); "
            "see docs/DIAGNOSIS.md"
        )
    db = database(settings)
    result = asyncio.run(_investigate(settings, db, incident_id))
    if as_json:
        echo(json.dumps(result, indent=2))
        return
    for m in result["messages"]:
        text = str(m.get("content") or "")
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            text += f"\n-> {fn['name']} {fn['arguments']}"
        out.print(f"[{m['role']}] {printable(text.strip())}", markup=False, soft_wrap=True)
    u = result["usage"]
    out.print(
        f"stop: {result['stop_reason']}"
        + (f" ({result['error']})" if result["error"] else "")
        + f"; {u['calls']} call(s), {u['total_tokens']} tokens, {u['wall_seconds']} s",
        markup=False,
    )
    if p := result["proposal"]:
        out.print(
            f"proposal: {p['fix']} (confidence {p['confidence']:.2f}, {p['model']}): {p['reason']}",
            markup=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    app.command("diagnose")(diagnose)
