"""The Anthropic Messages adapter: ``POST {base_url}/messages`` with tool use.

Translation from Guard's OpenAI form: system messages become ``system``; an assistant's
``tool_calls`` become ``tool_use`` blocks; consecutive ``tool`` messages become one user turn
of ``tool_result`` blocks; tools become ``{name, description, input_schema}``. The answer's
``text`` and ``tool_use`` blocks come back as one OpenAI assistant message; ``stop_reason``
``end_turn``/``tool_use``/``max_tokens`` maps to ``stop``/``tool_calls``/``length``.

Tested by ``tests/llm/test_providers.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from guard.config import EndpointSettings
from guard.llm.base import Completion, Message, ProviderError, Tool, Usage
from guard.llm.http import Endpoint
from guard.redact import Redactor

DEFAULT_URL = "https://api.anthropic.com/v1"
VERSION = "2023-06-01"
STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


def _arguments(text: str) -> Any:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"_unparsed": text}  # a malformed call is still shown as it was made
    return value if isinstance(value, dict) else {"_value": value}


def to_anthropic(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The ``system`` text and the ``messages`` list for the Messages API."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "system":
            system.append(str(m.get("content") or ""))
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m["tool_call_id"],
                "content": str(m.get("content") or ""),
            }
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": str(m["content"])})
            for call in m.get("tool_calls") or []:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": _arguments(call["function"].get("arguments", "{}")),
                    }
                )
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]})
            continue
        text = {"type": "text", "text": str(m.get("content") or "")}
        if out and out[-1]["role"] == "user":  # the API wants user and assistant to alternate
            if isinstance(out[-1]["content"], str):
                out[-1]["content"] = [{"type": "text", "text": out[-1]["content"]}]
            out[-1]["content"].append(text)
        else:
            out.append({"role": "user", "content": str(m.get("content") or "")})
    return "\n\n".join(system), out


def tools_to_anthropic(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "input_schema": t["function"].get("parameters") or {"type": "object"},
        }
        for t in tools
    ]


def from_anthropic(data: dict[str, Any]) -> tuple[Message, str]:
    """The OpenAI-form assistant message and the normalised stop reason."""
    content = data.get("content")
    if not isinstance(content, list):
        raise ProviderError("the answer has no content blocks", status=502)
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    calls = [
        {
            "id": b.get("id", ""),
            "type": "function",
            "function": {"name": b.get("name", ""), "arguments": json.dumps(b.get("input") or {})},
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    message: Message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message, STOP.get(str(data.get("stop_reason")), str(data.get("stop_reason")))


class AnthropicProvider:
    def __init__(self, settings: EndpointSettings, redactor: Redactor) -> None:
        assert settings.model is not None
        self.model = settings.model
        self.name = f"anthropic:{settings.model}"
        headers = {"content-type": "application/json", "anthropic-version": VERSION}
        if settings.api_key is not None:
            headers["x-api-key"] = settings.api_key.get_secret_value()
        self.endpoint = Endpoint(settings, redactor, default_url=DEFAULT_URL, headers=headers)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> Completion:
        system, converted = to_anthropic(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": converted,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools_to_anthropic(tools)
        data = await self.endpoint.post("/messages", body)
        message, stop = from_anthropic(data)
        usage = data.get("usage") or {}
        return Completion(
            message,
            Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)),
            stop,
            str(data.get("model") or self.model),
        )

    async def aclose(self) -> None:
        await self.endpoint.aclose()
