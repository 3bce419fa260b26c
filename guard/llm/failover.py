"""Failover through ``llm.fallback``: the next endpoint takes the turn when one fails.

An endpoint that still fails after its own retries on 429/5xx, or that refuses at once
(401/403/404: a wrong key, model or URL), hands the turn to the next one, at most once per
turn. The endpoint that answered serves the following turns. A malformed request (400, 422)
fails the turn everywhere alike, so it is not passed on.

Tested by ``tests/llm/test_providers.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from loguru import logger

from guard.llm.base import Completion, Message, ModelProvider, ProviderError, Tool


class FailoverProvider:
    def __init__(self, providers: Sequence[ModelProvider]) -> None:
        assert providers
        self.providers = list(providers)
        self.current = 0
        self.failovers = 0

    @property
    def name(self) -> str:
        return self.providers[self.current].name

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> Completion:
        first = self.providers[self.current]
        try:
            return await first.complete(
                messages, tools, max_tokens=max_tokens, temperature=temperature
            )
        except ProviderError as exc:
            if exc.fatal or self.current + 1 >= len(self.providers):
                raise
            self.current += 1
            self.failovers += 1
            logger.warning(
                "model endpoint {} failed ({}); failing over to {}",
                first.name,
                exc,
                self.providers[self.current].name,
            )
        return await self.providers[self.current].complete(
            messages, tools, max_tokens=max_tokens, temperature=temperature
        )

    async def aclose(self) -> None:
        for p in self.providers:
            await p.aclose()
