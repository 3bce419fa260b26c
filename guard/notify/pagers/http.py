"""One POST to a pager or webhook, its answer sorted into the outbox's three outcomes.

2xx: delivered. 400-499 other than 408 and 429: refused for good (``Rejected``: the row fails
and is logged). 408, 429 and 5xx: ``Retry`` (``Retry-After`` honoured when given). A network
error or a timeout: ``Unreachable`` (the receiver may have acted on it: the next attempt carries
the same dedup key or delivery id, so it is not acted on twice).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from guard.notify.channel import Rejected, Retry, Unreachable
from guard.redact import redact

ERROR_LIMIT = 300  # characters of a refusal's body kept in the row and the log


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return 0.0


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any] | bytes,
    *,
    seconds: float,
    who: str,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """POST ``body`` (a dict is sent as JSON; bytes as they are) and return the JSON answer
    (empty if none)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        response = await client.post(
            url,
            content=data,
            headers={"Content-Type": "application/json", **(headers or {})},
            timeout=seconds,
        )
    except httpx.HTTPError as exc:
        raise Unreachable(
            f"{who}: {type(exc).__name__}: {redact(str(exc))}"[:ERROR_LIMIT]
        ) from None
    status = response.status_code
    text = redact(response.text[:ERROR_LIMIT])
    said = f": {text}" if text.strip() else " (no body)"
    if 200 <= status < 300:
        try:
            reply = response.json()
        except ValueError:
            return {}
        return reply if isinstance(reply, dict) else {}
    if status in (408, 429) or status >= 500:
        raise Retry(_retry_after(response), f"{who} answered {status}{said}")
    raise Rejected(f"{who} refused it ({status}){said}")
