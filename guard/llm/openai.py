"""The OpenAI chat-completions adapter (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama's /v1).

``POST {base_url}/chat/completions`` with ``tools``; Guard's internal form is this API's own,
so messages go out as they are and the first choice's message comes back.

Tested by ``tests/llm/test_providers.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from guard.config import EndpointSettings
from guard.llm.base import Completion, Message, ProviderError, Tool, Usage
from guard.llm.http import Endpoint
from guard.redact import Redactor

DEFAULT_URL = "https://api.openai.com/v1"


class OpenAIProvider:
    def __init__(self, settings: EndpointSettings, redactor: Redactor) -> None:
        assert settings.model is not None
        self.model = settings.model
        self.name = f"openai:{settings.model}"
        headers = {"content-type": "application/json"}
        if settings.api_key is not None:
            headers["authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        self.endpoint = Endpoint(settings, redactor, default_url=DEFAULT_URL, headers=headers)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if tools:
            body["tools"] = list(tools)
        data = await self.endpoint.post("/chat/completions", body)
        try:
            choice = data["choices"][0]
            raw = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError("the answer has no choices[0].message", status=502) from None
        message: Message = {"role": "assistant", "content": raw.get("content")}
        if raw.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": c.get("id", ""),
                    "type": "function",
                    "function": {
                        "name": c["function"].get("name", ""),
                        "arguments": c["function"].get("arguments") or "{}",
                    },
                }
                for c in raw["tool_calls"]
            ]
        usage = data.get("usage") or {}
        return Completion(
            message,
            Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            str(choice.get("finish_reason") or "stop"),
            str(data.get("model") or self.model),
        )

    async def aclose(self) -> None:
        await self.endpoint.aclose()
