"""The ModelProvider port: one chat turn with tools, in OpenAI's message form.

Guard keeps one internal form, OpenAI's chat messages (``role`` system/user/assistant/tool;
an assistant's ``tool_calls`` with ``function.arguments`` as a JSON string; a tool message's
``tool_call_id``). Each adapter translates to its wire format and back. Errors carry their
retry semantics: ``ProviderError.status`` and ``retryable`` (429, 5xx, a timeout) decide
whether the failover tries the next endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from guard.domain.exceptions import GuardError

Message = dict[str, Any]
"""An OpenAI-style chat message."""
Tool = dict[str, Any]
"""An OpenAI-style tool: ``{"type": "function", "function": {name, description, parameters}}``."""


class ProviderError(GuardError):
    """A model endpoint failed. ``status``: the HTTP status (None: no answer, e.g. timeout)."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Worth retrying on the same endpoint: throttled, a server error, or no answer."""
        return self.status is None or self.status == 429 or self.status >= 500

    @property
    def fatal(self) -> bool:
        """Not worth retrying anywhere with this request: a malformed request (400, 422)."""
        return self.status is not None and not self.retryable and self.status not in (401, 403, 404)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    """One assistant turn: ``message`` in OpenAI form (``content``, maybe ``tool_calls``)."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "stop"  # stop, tool_calls, length (normalised to OpenAI's names)
    model: str = ""


@runtime_checkable
class ModelProvider(Protocol):
    """A chat model that may call tools."""

    @property
    def name(self) -> str:
        """``provider:model``, for the record."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> Completion:
        """One assistant turn for ``messages``; ``tools`` empty: the model must answer."""
        ...

    async def aclose(self) -> None: ...
