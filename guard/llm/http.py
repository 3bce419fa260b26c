"""The one way out to a model endpoint: redact, POST JSON, retry.

Every request body passes through ``Redactor.redact`` here (each string in it: messages,
tool results, tool arguments), so no adapter can send a configured secret by mistake. A 429
(honouring ``Retry-After``), a 5xx or no answer is retried with exponential backoff; anything
else fails at once, as a ``ProviderError``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from guard.config import EndpointSettings
from guard.llm.base import ProviderError
from guard.redact import Redactor

MAX_RETRY_AFTER = 60.0


def redact_body(value: Any, redactor: Redactor) -> Any:
    """``value`` with every string in it redacted (keys kept)."""
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {k: redact_body(v, redactor) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_body(v, redactor) for v in value]
    return value


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER) if value is not None else None
    except ValueError:
        return None


class Endpoint:
    """An httpx client bound to one configured endpoint."""

    def __init__(
        self,
        settings: EndpointSettings,
        redactor: Redactor,
        *,
        default_url: str,
        headers: dict[str, str],
    ) -> None:
        self.settings = settings
        self.redactor = redactor
        self.base_url = (settings.base_url or default_url).rstrip("/")
        self.client = httpx.AsyncClient(timeout=settings.timeout, headers=headers)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` (redacted) to ``path``; the JSON answer. Retries 429/5xx/timeouts."""
        clean = redact_body(body, self.redactor)
        delay = self.settings.backoff
        for attempt in range(self.settings.retries + 1):
            try:
                return await self._once(path, clean)
            except ProviderError as exc:
                if not exc.retryable or attempt == self.settings.retries:
                    raise
                wait = exc.retry_after if exc.retry_after is not None else delay
                delay *= 2
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _once(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.base_url + path
        try:
            response = await self.client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise ProviderError(f"{url}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            detail = self.redactor.redact(response.text[:300])
            raise ProviderError(
                f"{url}: HTTP {response.status_code}: {detail}",
                status=response.status_code,
                retry_after=_retry_after(response),
            )
        try:
            data = response.json()
        except ValueError:
            raise ProviderError(f"{url}: the answer is not JSON", status=502) from None
        if not isinstance(data, dict):
            raise ProviderError(f"{url}: the answer is not a JSON object", status=502)
        return data

    async def aclose(self) -> None:
        await self.client.aclose()
