"""A scripted model endpoint on 127.0.0.1 speaking OpenAI chat completions or Anthropic Messages.

It replies from a script (tool calls, text, or an HTTP error) and refuses what the real APIs
refuse: a missing or wrong API key (401), a missing model, a tool message without a matching
tool call, an unanswered tool call, Anthropic turns that do not alternate or a ``tool_result``
that answers no ``tool_use`` (400). Every request body is kept, raw, for the tests to read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.local_http import serve, stop


@dataclass
class Reply:
    """One scripted turn: tool calls (arguments as a dict, or a raw string), text, or an error."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    text: str | None = None
    status: int = 200
    retry_after: float | None = None


def call(name: str, _raw: str | None = None, **args: Any) -> Reply:
    return Reply(calls=[(name, _raw if _raw is not None else args)])


def say(text: str) -> Reply:
    return Reply(text=text)


def error(status: int, retry_after: float | None = None) -> Reply:
    return Reply(status=status, retry_after=retry_after)


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ModelServer:
    """``kind`` is "openai" or "anthropic"; ``script`` is consumed one reply per request,
    then ``default(n)`` (n: the request's number) answers."""

    def __init__(
        self,
        kind: str,
        *,
        api_key: str = "sk-test-key-0123456789",
        script: list[Reply] | None = None,
        default: Callable[[int], Reply] | None = None,
    ) -> None:
        self.kind = kind
        self.api_key = api_key
        self.script = list(script or [])
        self.default = default or (lambda n: say("I have nothing more to add."))
        self.bodies: list[bytes] = []  # every request body, as received
        self.requests: list[dict[str, Any]] = []  # the accepted ones, parsed
        self.refusals: list[str] = []
        self.statuses: list[int] = []
        self.lock = threading.Lock()
        self.server, self.url = serve(self._handler())
        self.base_url = self.url + "/v1"

    def close(self) -> None:
        stop(self.server)

    def config(self, **extra: Any) -> dict[str, Any]:
        """The ``llm`` config section pointing at this server."""
        return {
            "provider": self.kind,
            "model": "scripted-1",
            "base_url": self.base_url,
            "api_key": self.api_key,
            "timeout": "10s",
            "backoff": "10ms",
            **extra,
        }

    @property
    def sent(self) -> str:
        return "\n".join(b.decode("utf-8", "replace") for b in self.bodies)

    # -- protocol --------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    status, body, headers = owner.answer(self.path, dict(self.headers), raw)
                except Refused as exc:
                    owner.refusals.append(str(exc))
                    status, body, headers = exc.status, owner.error_body(str(exc)), {}
                owner.statuses.append(status)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def error_body(self, message: str) -> dict[str, Any]:
        if self.kind == "anthropic":
            return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        return {"error": {"message": message, "type": "invalid_request_error"}}

    def answer(
        self, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            self.bodies.append(raw)
        lower = {k.lower(): v for k, v in headers.items()}
        expected = "/v1/messages" if self.kind == "anthropic" else "/v1/chat/completions"
        if path != expected:
            raise Refused(404, f"no route {path}")
        if self.kind == "anthropic":
            if lower.get("x-api-key") != self.api_key:
                raise Refused(401, "invalid x-api-key")
            if not lower.get("anthropic-version"):
                raise Refused(400, "anthropic-version header is required")
        elif lower.get("authorization") != f"Bearer {self.api_key}":
            raise Refused(401, "Incorrect API key provided")
        body = json.loads(raw)
        if not body.get("model"):
            raise Refused(400, "model is required")
        if self.kind == "anthropic":
            check_anthropic(body)
        else:
            check_openai(body)
        with self.lock:
            n = len(self.requests)
            self.requests.append(body)
            reply = self.script.pop(0) if self.script else self.default(n)
        if reply.status != 200:
            extra = (
                {"retry-after": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
            )
            return reply.status, self.error_body(f"scripted {reply.status}"), extra
        if not body.get("tools") and reply.calls:  # no tools offered: a model cannot call one
            reply = say("(no tools were offered, so I answer) the cause is still unclear")
        size = len(raw) // 4
        if self.kind == "anthropic":
            return 200, anthropic_reply(reply, n, size), {}
        return 200, openai_reply(reply, n, size), {}


def check_openai(body: dict[str, Any]) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "messages must be a non-empty array")
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or not tool.get("function", {}).get("name"):
            raise Refused(400, "tools[].function.name is required")
    pending: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                raise Refused(
                    400,
                    f"messages[{i}]: a message with role 'tool' must be a "
                    "response to a preceding message with 'tool_calls'",
                )
            pending.discard(m["tool_call_id"])
            continue
        if pending:
            raise Refused(
                400,
                f"messages[{i}]: an assistant message with 'tool_calls' must "
                f"be followed by tool messages responding to each tool_call_id "
                f"(missing {sorted(pending)})",
            )
        if role == "assistant":
            for c in m.get("tool_calls") or []:
                json.loads(json.dumps(c["function"]["arguments"]))  # a string, as sent
                pending.add(c["id"])
        elif role not in ("system", "user"):
            raise Refused(400, f"messages[{i}]: invalid role {role!r}")


def check_anthropic(body: dict[str, Any]) -> None:
    if not isinstance(body.get("max_tokens"), int):
        raise Refused(400, "max_tokens: field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or messages[0].get("role") != "user":
        raise Refused(400, "messages: first message must use the user role")
    for tool in body.get("tools") or []:
        if not tool.get("name") or "input_schema" not in tool:
            raise Refused(400, "tools: name and input_schema are required")
    pending: set[str] = set()
    for i, m in enumerate(messages):
        if i and m.get("role") == messages[i - 1].get("role"):
            raise Refused(400, f"messages.{i}: roles must alternate between user and assistant")
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if m.get("role") == "user":
            results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
            if results - pending:
                raise Refused(
                    400, f"messages.{i}: unexpected tool_use_id found in tool_result blocks"
                )
            if pending - results:
                raise Refused(
                    400,
                    f"messages.{i}: tool_use ids were found without "
                    f"tool_result blocks immediately after: {sorted(pending)}",
                )
            pending = set()
        elif m.get("role") == "assistant":
            pending = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        else:
            raise Refused(400, f"messages.{i}: invalid role")


def openai_reply(reply: Reply, n: int, size: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(reply.calls)
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": "scripted-1",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20},
    }


def anthropic_reply(reply: Reply, n: int, size: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, (name, args) in enumerate(reply.calls):
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{n}_{i}",
                "name": name,
                "input": args if isinstance(args, dict) else {"raw": args},
            }
        )
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "scripted-1",
        "content": content,
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": size, "output_tokens": 20},
    }
