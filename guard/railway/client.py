"""An async client for Railway's public GraphQL API.

One ``execute`` does the transport work for every operation: it waits for the shared rate
limiter, POSTs ``{query, variables}``, retries 5xx, 429 and timeouts with exponential backoff
(a ``Retry-After`` header wins over the backoff and pauses the shared limiter), and turns
GraphQL ``errors`` (which Railway may send with HTTP 200) into ``RailwayError`` carrying
Railway's message. httpx errors never leave this module untranslated.

Credentials: an account or workspace token goes in ``Authorization: Bearer``; a project token
in ``Project-Access-Token``, and then ``project_token_scope`` tells its project and environment.
Token values are read only while building headers and never logged.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx
from loguru import logger

from guard.config import RailwaySettings
from guard.exceptions import RailwayError
from guard.railway import queries
from guard.railway.budget import Limiter, shared_limiter
from guard.railway.models import Deployment, DeploymentStatus, LogLine, Project, ProjectTokenScope

MAX_RETRY_AFTER = 60.0  # longer waits fail the call (the next scheduled check tries again)
LOG_LIMIT = 500


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _edges(conn: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [edge["node"] for edge in (conn or {}).get("edges") or []]


class RailwayClient:
    """Railway operations Guard uses; ``async with`` closes the connection pool."""

    def __init__(self, settings: RailwaySettings, *, limiter: Limiter | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if settings.token is None and settings.project_token is None:
            raise RailwayError("no Railway credentials: set railway.token (account or workspace "
                               "token) or railway.project_token (GUARD_RAILWAY__TOKEN)")
        self.settings = settings
        self.limiter = limiter or shared_limiter(settings)
        self._http = httpx.AsyncClient(timeout=settings.timeout, transport=transport,
                                       headers={"User-Agent": "guard/0.1"})
        self.attempts = 0  # HTTP attempts made, retries included (for tests and logs)

    async def __aenter__(self) -> RailwayClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        if self.settings.token is not None:
            return {"Authorization": f"Bearer {self.settings.token.get_secret_value()}"}
        assert self.settings.project_token is not None
        return {"Project-Access-Token": self.settings.project_token.get_secret_value()}

    # -- transport ------------------------------------------------------------------------------

    async def execute(self, query: str, variables: Mapping[str, Any] | None = None,
                      ) -> dict[str, Any]:
        """Run one GraphQL operation and return its ``data``; raise ``RailwayError``."""
        operation = query.split("(")[0].split("{")[0].split()[-1]
        retries = self.settings.retries
        for attempt in range(retries + 1):
            await self.limiter.acquire()
            self.attempts += 1
            try:
                return await self._attempt(operation, query, variables)
            except RailwayError as exc:
                if not exc.retryable:
                    raise
                if attempt == retries:
                    raise RailwayError(f"{exc} (gave up after {attempt + 1} attempts)",
                                       status_code=exc.status_code, retryable=True) from None
                delay = exc.retry_after if exc.retry_after is not None else (
                    self.settings.backoff * 2 ** attempt * random.uniform(0.8, 1.2))
                logger.warning("railway {} failed ({}); retry {}/{} in {:.2f}s", operation, exc,
                               attempt + 1, retries, delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _attempt(self, operation: str, query: str,
                       variables: Mapping[str, Any] | None) -> dict[str, Any]:
        try:
            resp = await self._http.post(self.settings.api_url, headers=self._headers(),
                                         json={"query": query, "variables": dict(variables or {})})
        except httpx.TimeoutException:
            raise RailwayError(f"railway {operation}: no answer within {self.settings.timeout:g}s",
                               retryable=True) from None
        except httpx.TransportError as exc:
            raise RailwayError(f"railway {operation}: cannot reach {self.settings.api_url}: "
                               f"{type(exc).__name__}", retryable=True) from None
        status = resp.status_code
        if status == 429 or status >= 500:
            wait = _retry_after(resp.headers.get("Retry-After"))
            what = f"railway {operation}: HTTP {status}" + (
                " (rate limited by Railway)" if status == 429 else "")
            if wait is None:
                raise RailwayError(what, status_code=status, retryable=True)
            self.limiter.pause(min(wait, MAX_RETRY_AFTER))
            if wait > MAX_RETRY_AFTER:
                raise RailwayError(f"{what}; Railway asks to wait {wait:.0f}s",
                                   status_code=status, retry_after=wait)
            raise RailwayError(what, status_code=status, retryable=True, retry_after=wait)
        try:
            body = resp.json()
        except ValueError:
            raise RailwayError(f"railway {operation}: HTTP {status} with a non-JSON body "
                               f"({resp.text[:200]!r})", status_code=status) from None
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors:
            messages = "; ".join(str(e.get("message", e)) for e in errors)
            hint = " (check railway.token)" if status in (401, 403) or "auth" in messages.lower() \
                else ""
            raise RailwayError(f"railway {operation}: {messages}{hint}", status_code=status)
        if status >= 400:
            raise RailwayError(f"railway {operation}: HTTP {status}", status_code=status)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise RailwayError(f"railway {operation}: the answer has no data", status_code=status)
        return data

    # -- queries --------------------------------------------------------------------------------

    async def project_token_scope(self) -> ProjectTokenScope:
        data = await self.execute(queries.PROJECT_TOKEN)
        return ProjectTokenScope.model_validate(data["projectToken"])

    async def project(self, project_id: str) -> Project:
        node = (await self.execute(queries.PROJECT, {"id": project_id}))["project"]
        return Project.model_validate({
            "id": node["id"], "name": node["name"],
            "services": _edges(node.get("services")),
            "environments": _edges(node.get("environments")),
        })

    async def latest_deployment(self, environment_id: str, service_id: str) -> Deployment | None:
        data = await self.execute(queries.LATEST_DEPLOYMENT,
                                  {"environmentId": environment_id, "serviceId": service_id})
        node = (data.get("serviceInstance") or {}).get("latestDeployment")
        return Deployment.model_validate(node) if node else None

    async def deployments(self, project_id: str, service_id: str, environment_id: str, *,
                          statuses: list[DeploymentStatus] | None = None,
                          first: int = 20) -> list[Deployment]:
        """Deployments of one service, newest first (optionally only those in ``statuses``)."""
        inp: dict[str, Any] = {"projectId": project_id, "serviceId": service_id,
                               "environmentId": environment_id}
        if statuses:
            inp["status"] = {"in": [s.value for s in statuses]}
        data = await self.execute(queries.DEPLOYMENTS, {"input": inp, "first": first})
        found = [Deployment.model_validate(n) for n in _edges(data["deployments"])]
        return sorted(found, key=lambda d: d.created_at, reverse=True)

    async def _logs(self, query: str, field: str, deployment_id: str, since: str | None,
                    limit: int, filter: str | None) -> list[LogLine]:
        variables: dict[str, Any] = {"deploymentId": deployment_id, "limit": limit}
        if since is not None:
            variables["startDate"] = since
        if filter:
            variables["filter"] = filter
        data = await self.execute(query, variables)
        return [LogLine.model_validate(line) for line in data[field] or []]

    async def deployment_logs(self, deployment_id: str, *, since: str | None = None,
                              limit: int = LOG_LIMIT, filter: str | None = None) -> list[LogLine]:
        return await self._logs(queries.DEPLOYMENT_LOGS, "deploymentLogs", deployment_id, since,
                                limit, filter)

    async def build_logs(self, deployment_id: str, *, since: str | None = None,
                         limit: int = LOG_LIMIT, filter: str | None = None) -> list[LogLine]:
        return await self._logs(queries.BUILD_LOGS, "buildLogs", deployment_id, since, limit,
                                filter)

    # -- mutations ------------------------------------------------------------------------------

    async def restart(self, deployment_id: str) -> bool:
        data = await self.execute(queries.DEPLOYMENT_RESTART, {"id": deployment_id})
        return bool(data["deploymentRestart"])

    async def redeploy(self, deployment_id: str) -> Deployment:
        data = await self.execute(queries.DEPLOYMENT_REDEPLOY, {"id": deployment_id})
        return Deployment.model_validate(data["deploymentRedeploy"])

    async def rollback(self, deployment_id: str) -> bool:
        data = await self.execute(queries.DEPLOYMENT_ROLLBACK, {"id": deployment_id})
        return bool(data["deploymentRollback"])

    async def redeploy_service_instance(self, environment_id: str, service_id: str) -> bool:
        data = await self.execute(queries.SERVICE_INSTANCE_REDEPLOY,
                                  {"environmentId": environment_id, "serviceId": service_id})
        return bool(data["serviceInstanceRedeploy"])
