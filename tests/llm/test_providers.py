"""The adapters against protocol-faithful local servers: tool calls both ways, auth, retries
(429 with Retry-After, 5xx), failover through ``llm.fallback``, and the redaction choke point."""

from __future__ import annotations

import json
from typing import Any

import pytest

from guard.config import LLMSettings
from guard.llm import ProviderError, build_provider
from guard.redact import Redactor
from tests.fakes.model import ModelServer, call, error, say

pytestmark = pytest.mark.unit

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "sandbox_run",
            "description": "run a command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


def provider(*servers: ModelServer, redactor: Redactor | None = None, **extra: Any):
    first, *rest = servers
    settings = LLMSettings.model_validate(
        first.config(fallback=[s.config(**extra) for s in rest], **extra)
    )
    built = build_provider(settings, redactor or Redactor())
    assert built is not None
    return built


async def test_a_tool_call_and_its_result_make_a_round_trip(model_server: ModelServer) -> None:
    model_server.script = [call("sandbox_run", command="uptime"), say("all good")]
    p = provider(model_server)
    try:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "why is it down?"},
        ]
        first = await p.complete(messages, TOOLS)
        (tool_call,) = first.message["tool_calls"]
        assert first.stop_reason == "tool_calls"
        assert tool_call["function"]["name"] == "sandbox_run"
        assert json.loads(tool_call["function"]["arguments"]) == {"command": "uptime"}
        assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens == 20
        messages += [
            first.message,
            {"role": "tool", "tool_call_id": tool_call["id"], "content": "up 3 days"},
        ]
        second = await p.complete(messages, TOOLS)
        assert second.message["content"] == "all good" and second.stop_reason == "stop"
        assert model_server.refusals == []  # the server accepted the conversation as sent
        last = model_server.requests[-1]
        if model_server.kind == "anthropic":
            assert last["system"] == "be brief" and last["temperature"] == 0
            result = last["messages"][-1]["content"][0]
            assert result == {
                "type": "tool_result",
                "tool_use_id": tool_call["id"],
                "content": "up 3 days",
            }
            assert last["tools"][0]["input_schema"]["required"] == ["command"]
        else:
            assert last["messages"][-1] == {
                "role": "tool",
                "tool_call_id": tool_call["id"],
                "content": "up 3 days",
            }
            assert last["temperature"] == 0 and last["tools"] == TOOLS
    finally:
        await p.aclose()


async def test_the_server_refuses_an_unanswered_tool_call(model_server: ModelServer) -> None:
    """The fake is faithful: a conversation the real APIs refuse is refused (400)."""
    model_server.script = [call("sandbox_run", command="uptime")]
    p = provider(model_server, retries=0)
    try:
        first = await p.complete([{"role": "user", "content": "hi"}], TOOLS)
        with pytest.raises(ProviderError) as raised:
            await p.complete(
                [
                    {"role": "user", "content": "hi"},
                    first.message,
                    {"role": "user", "content": "well?"},
                ],
                TOOLS,
            )
        assert raised.value.status == 400
    finally:
        await p.aclose()


async def test_a_wrong_key_is_refused_with_401(model_server: ModelServer) -> None:
    p = provider(model_server)
    model_server.api_key = "sk-a-different-key-000000"  # the key Guard has is now wrong
    try:
        with pytest.raises(ProviderError) as raised:
            await p.complete([{"role": "user", "content": "hi"}], TOOLS)
        assert raised.value.status == 401 and len(model_server.bodies) == 1  # not retried
    finally:
        await p.aclose()


async def test_429_is_retried_after_retry_after_and_5xx_with_backoff(
    model_server: ModelServer,
) -> None:
    model_server.script = [error(429, retry_after=0.05), error(500), error(503), say("ok")]
    p = provider(model_server)
    try:
        done = await p.complete([{"role": "user", "content": "hi"}], TOOLS)
        assert done.message["content"] == "ok"
        assert model_server.statuses == [429, 500, 503, 200]
    finally:
        await p.aclose()


async def test_failover_after_retries_on_5xx_and_at_once_on_401(
    openai_server: ModelServer, second_server: ModelServer
) -> None:
    openai_server.default = lambda n: error(500)
    second_server.script = [say("from the fallback"), say("still the fallback")]
    p = provider(openai_server, second_server, retries=2)
    try:
        done = await p.complete([{"role": "user", "content": "hi"}], TOOLS)
        assert done.message["content"] == "from the fallback"
        assert openai_server.statuses == [500, 500, 500]  # 1 try + 2 retries, then failover
        assert second_server.statuses == [200]
        again = await p.complete([{"role": "user", "content": "hi"}], TOOLS)
        assert again.message["content"] == "still the fallback"  # the one that answered
        assert len(openai_server.statuses) == 3
    finally:
        await p.aclose()
    second_server.script = [say("fallback")]
    p = provider(openai_server, second_server, retries=2)
    openai_server.api_key = "sk-rotated-000000000000"  # the key Guard has is now wrong
    try:
        assert (await p.complete([{"role": "user", "content": "x"}], TOOLS)).message[
            "content"
        ] == "fallback"
        assert openai_server.statuses[3:] == [401]  # at once: no retries on 401
    finally:
        await p.aclose()


async def test_failover_happens_at_most_once_per_turn(
    openai_server: ModelServer, second_server: ModelServer
) -> None:
    third = ModelServer("openai", api_key="sk-third-key-5555555555")
    try:
        for s in (openai_server, second_server, third):
            s.default = lambda n: error(503)
        p = provider(openai_server, second_server, third, retries=0)
        try:
            with pytest.raises(ProviderError):
                await p.complete([{"role": "user", "content": "hi"}], TOOLS)
            assert len(openai_server.bodies) == 1 and len(second_server.bodies) == 1
            assert third.bodies == []
        finally:
            await p.aclose()
    finally:
        third.close()


async def test_every_request_body_is_redacted_at_the_choke_point(model_server: ModelServer) -> None:
    """A configured secret inside a message, a tool result or a tool call's arguments is
    replaced before the body leaves (the adapters cannot bypass it)."""
    secret = "hunter2-database-password-xyz"
    redactor = Redactor()
    redactor.register_all([secret], name="config")
    model_server.script = [say("ok")]
    p = provider(model_server, redactor=redactor)
    try:
        await p.complete(
            [
                {"role": "user", "content": f"the log says password {secret}"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "sandbox_run",
                                "arguments": json.dumps({"command": f"echo {secret}"}),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": f"{secret}\n"},
            ],
            TOOLS,
        )
        assert model_server.refusals == []
        assert secret not in model_server.sent
        assert "[REDACTED:config]" in model_server.sent
    finally:
        await p.aclose()


def test_provider_none_builds_nothing_and_a_model_is_required() -> None:
    assert build_provider(LLMSettings(), Redactor()) is None
    with pytest.raises(ValueError, match=r"llm\.model is required"):
        LLMSettings(provider="openai")
