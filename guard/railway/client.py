"""An async client for Railway's public GraphQL API.

One ``execute`` does the transport work for every operation: it waits for the shared rate
limiter, POSTs ``{query, variables}``, retries 5xx, 429 and timeouts with exponential backoff
(a ``Retry-After`` header wins over the backoff and pauses the shared limiter), and turns
GraphQL ``errors`` (which Railway may send with HTTP 200) into ``RailwayError`` carrying
Railway's message. httpx errors never leave this module untranslated, and neither does an answer
of an unexpected shape: a missing or mistyped field is a ``RailwayError`` naming that field
(``_get``, ``_model``), which the monitor reports as a ``monitor_error`` signal.

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
from typing import Any, TypeVar

import httpx
from loguru import logger
from pydantic import BaseModel, ValidationError

from guard.config import RailwaySettings
from guard.domain.exceptions import RailwayError
from guard.railway import queries
from guard.railway.budget import Limiter, shared_limiter
from guard.railway.models import Deployment, DeploymentStatus, LogLine, Project, ProjectTokenScope

M = TypeVar("M", bound=BaseModel)
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


def _get(value: Any, path: str, *, operation: str, optional: bool = False) -> Any:
    """``value[a][b]...`` for ``path`` ``"a.b"``, or a ``RailwayError`` naming the field that
    is missing or of the wrong shape (a changed API must not surface as a raw KeyError)."""
    seen: list[str] = []
    for key in path.split("."):
        if value is None and optional:
            return None
        if not isinstance(value, Mapping):
            where = ".".join(seen) or "data"
            raise RailwayError(
                f"railway {operation}: unexpected answer: {where} is "
                f"{type(value).__name__}, not an object"
            )
        seen.append(key)
        if key not in value and not optional:
            raise RailwayError(
                f"railway {operation}: unexpected answer: field {'.'.join(seen)} is missing"
            )
        value = value.get(key)
    return value


def _list(value: Any, where: str, operation: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RailwayError(
            f"railway {operation}: unexpected answer: {where} is {type(value).__name__}, not a list"
        )
    return value


def _edges(conn: Any, where: str, operation: str) -> list[Any]:
    edges = _list(
        _get(conn, "edges", operation=operation, optional=True), f"{where}.edges", operation
    )
    return [
        _get(edge, "node", operation=f"{operation}: {where}.edges[{i}]")
        for i, edge in enumerate(edges)
    ]


def _model(model: type[M], value: Any, where: str, operation: str) -> M:
    """``value`` validated as ``model``, or a ``RailwayError`` naming the field."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join([where, *(str(p) for p in first["loc"])])
        raise RailwayError(
            f"railway {operation}: unexpected answer: field {field}: {first['msg']}"
        ) from None


def _error_messages(errors: Any) -> str:
    """GraphQL ``errors`` as text, whatever their shape (a list of objects, a string...)."""
    items = errors if isinstance(errors, list) else [errors]
    return "; ".join(str(e.get("message", e)) if isinstance(e, Mapping) else str(e) for e in items)[
        :1000
    ]


class RailwayClient:
    """Railway operations Guard uses; ``async with`` closes the connection pool."""

    def __init__(
        self,
        settings: RailwaySettings,
        *,
        limiter: Limiter | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if settings.token is None and settings.project_token is None:
            raise RailwayError(
                "no Railway credentials: set railway.token (account or workspace "
                "token) or railway.project_token (GUARD_RAILWAY__TOKEN)"
            )
        self.settings = settings
        self.limiter = limiter or shared_limiter(settings)
        self._http = httpx.AsyncClient(
            timeout=settings.timeout, transport=transport, headers={"User-Agent": "guard/0.1"}
        )
        self.attempts = 0  # HTTP attempts made, retries included (for tests and logs)

    async def __aenter__(self) -> RailwayClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        if self.settings.token is not None:
            return {"Authorization": f"Bearer {self.settings.token.get_secret_value()}"}
        assert self.settings.project_token is not None
        return {"Project-Access-Token": self.settings.project_token.get_secret_value()}

    # -- transport ------------------------------------------------------------------------------

    async def execute(
        self,
        query: str,
        variables: Mapping[str, Any] | None = None,
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
                    raise RailwayError(
                        f"{exc} (gave up after {attempt + 1} attempts)",
                        status_code=exc.status_code,
                        retryable=True,
                    ) from None
                delay = (
                    exc.retry_after
                    if exc.retry_after is not None
                    else (self.settings.backoff * 2**attempt * random.uniform(0.8, 1.2))
                )
                logger.warning(
                    "railway {} failed ({}); retry {}/{} in {:.2f}s",
                    operation,
                    exc,
                    attempt + 1,
                    retries,
                    delay,
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _attempt(
        self, operation: str, query: str, variables: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        try:
            resp = await self._http.post(
                self.settings.api_url,
                headers=self._headers(),
                json={"query": query, "variables": dict(variables or {})},
            )
        except httpx.TimeoutException:
            raise RailwayError(
                f"railway {operation}: no answer within {self.settings.timeout:g}s", retryable=True
            ) from None
        except httpx.TransportError as exc:
            raise RailwayError(
                f"railway {operation}: cannot reach {self.settings.api_url}: {type(exc).__name__}",
                retryable=True,
            ) from None
        status = resp.status_code
        if status == 429 or status >= 500:
            wait = _retry_after(resp.headers.get("Retry-After"))
            what = f"railway {operation}: HTTP {status}" + (
                " (rate limited by Railway)" if status == 429 else ""
            )
            if wait is None:
                raise RailwayError(what, status_code=status, retryable=True)
            self.limiter.pause(min(wait, MAX_RETRY_AFTER))
            if wait > MAX_RETRY_AFTER:
                raise RailwayError(
                    f"{what}; Railway asks to wait {wait:.0f}s",
                    status_code=status,
                    retry_after=wait,
                )
            raise RailwayError(what, status_code=status, retryable=True, retry_after=wait)
        try:
            body = resp.json()
        except ValueError:
            raise RailwayError(
                f"railway {operation}: HTTP {status} with a non-JSON body ({resp.text[:200]!r})",
                status_code=status,
            ) from None
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors:
            messages = _error_messages(errors)
            hint = (
                " (check railway.token)"
                if status in (401, 403) or "auth" in messages.lower()
                else ""
            )
            raise RailwayError(f"railway {operation}: {messages}{hint}", status_code=status)
        if status >= 400:
            raise RailwayError(f"railway {operation}: HTTP {status}", status_code=status)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise RailwayError(f"railway {operation}: the answer has no data", status_code=status)
        return data

    # -- queries --------------------------------------------------------------------------------

    async def project_token_scope(self) -> ProjectTokenScope:
        op = "projectToken"
        data = await self.execute(queries.PROJECT_TOKEN)
        return _model(
            ProjectTokenScope, _get(data, "projectToken", operation=op), "projectToken", op
        )

    async def project(self, project_id: str) -> Project:
        op = "project"
        data = await self.execute(queries.PROJECT, {"id": project_id})
        return _model(
            Project,
            {
                "id": _get(data, "project.id", operation=op),
                "name": _get(data, "project.name", operation=op),
                "services": _edges(
                    _get(data, "project.services", operation=op, optional=True),
                    "project.services",
                    op,
                ),
                "environments": _edges(
                    _get(data, "project.environments", operation=op, optional=True),
                    "project.environments",
                    op,
                ),
            },
            "project",
            op,
        )

    async def latest_deployment(self, environment_id: str, service_id: str) -> Deployment | None:
        op = "latestDeployment"
        data = await self.execute(
            queries.LATEST_DEPLOYMENT, {"environmentId": environment_id, "serviceId": service_id}
        )
        node = _get(data, "serviceInstance.latestDeployment", operation=op, optional=True)
        return _model(Deployment, node, "serviceInstance.latestDeployment", op) if node else None

    async def deployments(
        self,
        project_id: str,
        service_id: str,
        environment_id: str,
        *,
        statuses: list[DeploymentStatus] | None = None,
        first: int = 20,
    ) -> list[Deployment]:
        """Deployments of one service, newest first (optionally only those in ``statuses``)."""
        op = "deployments"
        inp: dict[str, Any] = {
            "projectId": project_id,
            "serviceId": service_id,
            "environmentId": environment_id,
        }
        if statuses:
            inp["status"] = {"in": [s.value for s in statuses]}
        data = await self.execute(queries.DEPLOYMENTS, {"input": inp, "first": first})
        found = [
            _model(Deployment, n, f"deployments.edges[{i}].node", op)
            for i, n in enumerate(
                _edges(_get(data, "deployments", operation=op), "deployments", op)
            )
        ]
        return sorted(found, key=lambda d: d.created_at, reverse=True)

    async def _logs(
        self,
        query: str,
        field: str,
        deployment_id: str,
        since: str | None,
        limit: int,
        filter: str | None,
    ) -> list[LogLine]:
        variables: dict[str, Any] = {"deploymentId": deployment_id, "limit": limit}
        if since is not None:
            variables["startDate"] = since
        if filter:
            variables["filter"] = filter
        data = await self.execute(query, variables)
        lines = _list(_get(data, field, operation=field), field, field)
        return [_model(LogLine, line, f"{field}[{i}]", field) for i, line in enumerate(lines)]

    async def deployment_logs(
        self,
        deployment_id: str,
        *,
        since: str | None = None,
        limit: int = LOG_LIMIT,
        filter: str | None = None,
    ) -> list[LogLine]:
        return await self._logs(
            queries.DEPLOYMENT_LOGS, "deploymentLogs", deployment_id, since, limit, filter
        )

    async def build_logs(
        self,
        deployment_id: str,
        *,
        since: str | None = None,
        limit: int = LOG_LIMIT,
        filter: str | None = None,
    ) -> list[LogLine]:
        return await self._logs(
            queries.BUILD_LOGS, "buildLogs", deployment_id, since, limit, filter
        )

    # -- mutations ------------------------------------------------------------------------------

    async def restart(self, deployment_id: str) -> bool:
        data = await self.execute(queries.DEPLOYMENT_RESTART, {"id": deployment_id})
        return bool(_get(data, "deploymentRestart", operation="deploymentRestart"))

    async def redeploy(self, deployment_id: str) -> Deployment:
        data = await self.execute(queries.DEPLOYMENT_REDEPLOY, {"id": deployment_id})
        return _model(
            Deployment,
            _get(data, "deploymentRedeploy", operation="deploymentRedeploy"),
            "deploymentRedeploy",
            "deploymentRedeploy",
        )

    async def rollback(self, deployment_id: str) -> bool:
        data = await self.execute(queries.DEPLOYMENT_ROLLBACK, {"id": deployment_id})
        return bool(_get(data, "deploymentRollback", operation="deploymentRollback"))

    async def redeploy_service_instance(self, environment_id: str, service_id: str) -> bool:
        data = await self.execute(
            queries.SERVICE_INSTANCE_REDEPLOY,
            {"environmentId": environment_id, "serviceId": service_id},
        )
        return bool(_get(data, "serviceInstanceRedeploy", operation="serviceInstanceRedeploy"))
