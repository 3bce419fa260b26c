"""``http.request``: call an HTTP endpoint (a cache purge, a feature flag, a webhook)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from guard.actions.base import ActionContext, ActionError, ActionResult


class Request:
    name = "http.request"
    description = "send an HTTP request; ok when the status is 2xx (or in expect_status)"
    params = ("url", "method")

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        url = args.get("url")
        if not url or not str(url).startswith(("http://", "https://")):
            raise ActionError("http.request needs url=http(s)://...")
        method = str(args.get("method", "POST")).upper()
        expect = args.get("expect_status")
        timeout = float(args.get("timeout", 10))
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                resp = await client.request(
                    method, str(url), headers=args.get("headers") or {}, content=args.get("body")
                )
        except httpx.HTTPError as exc:
            raise ActionError(f"{method} {url} failed: {exc or type(exc).__name__}") from None
        ok = resp.status_code == int(expect) if expect else resp.is_success
        return ActionResult(
            ok,
            f"{method} {url} -> {resp.status_code}",
            {"status": resp.status_code, "body": resp.text[:2000]},
        )


ACTIONS = [Request()]
