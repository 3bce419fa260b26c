"""Trajectories as training data: the ``guard`` and ``sharegpt`` JSONL formats.

``guard``: one object per handling, with ``id``, ``incident_id``, ``model``, ``tools``,
``messages`` (OpenAI form, redacted), ``outcome`` (``stop_reason``, ``proposal``,
``human_decision``, ``verified``, ``skill``), ``usage`` and ``tool_stats``.

``sharegpt``: ``conversations`` of ``{from, value}`` (system, human, gpt, tool) with tool calls
in ``<tool_call>`` blocks and results in ``<tool_response>`` blocks, as Hermes Agent writes
them; ``completed`` is the *verified outcome*, not the model having stopped. The schemas are
``docs/trajectory.schema.json`` and ``docs/trajectory-sharegpt.schema.json``.
"""

from __future__ import annotations

import json
from typing import Any

from guard.redact import redact_value
from guard.store.models import Trajectory

ROLES = {"system": "system", "user": "human", "assistant": "gpt", "tool": "tool"}


def guard_record(row: Trajectory) -> dict[str, Any]:
    out = {
        "id": row.id,
        "incident_id": row.incident_id,
        "model": row.model,
        "created_at": row.created_at.isoformat(),
        "tools": row.tools,
        "messages": row.messages,
        "outcome": {
            "stop_reason": row.outcome.get("stop_reason"),
            "proposal": row.outcome.get("proposal"),
            "human_decision": row.outcome.get("human_decision"),
            "verified": row.outcome.get("verified"),
            "skill": row.outcome.get("skill"),
        },
        "usage": row.usage,
        "tool_stats": row.tool_stats,
    }
    return dict(redact_value(out))


def _value(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "")
    calls = message.get("tool_calls") or []
    blocks = []
    for call in calls:
        fn = call.get("function") or {}
        try:
            arguments: Any = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            arguments = fn.get("arguments")
        blocks.append(
            "<tool_call>\n"
            + json.dumps({"name": fn.get("name"), "arguments": arguments})
            + "\n</tool_call>"
        )
    if message["role"] == "tool":
        text = (
            "<tool_response>\n"
            + json.dumps({"tool_call_id": message.get("tool_call_id"), "content": text})
            + "\n</tool_response>"
        )
    return "\n".join([text, *blocks]).strip() if blocks else text


def sharegpt_record(row: Trajectory) -> dict[str, Any]:
    conversations = [
        {"from": ROLES.get(m["role"], "human"), "value": _value(m)} for m in row.messages
    ]
    if row.tools and conversations and conversations[0]["from"] == "system":
        names = json.dumps([t["function"] for t in row.tools])
        conversations[0]["value"] += f"\n<tools>\n{names}\n</tools>"
    out = {
        "id": row.id,
        "incident_id": row.incident_id,
        "model": row.model,
        "conversations": conversations,
        "completed": row.outcome.get("verified") is True,
    }
    return dict(redact_value(out))
