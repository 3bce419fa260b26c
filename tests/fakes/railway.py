"""A local stand-in for Railway's GraphQL API, faithful where Guard depends on it.

Every request is parsed and validated against Railway's real schema (the CLI's introspection
snapshot in ``shared/railway/schema.json``) with graphql-core, then executed against scripted
state with Railway's field names and shapes. Credentials are checked the way Railway does
(``Authorization: Bearer`` for account tokens, ``Project-Access-Token`` for project tokens).
Tests can queue faults: an HTTP status (429 with ``Retry-After``, 5xx), a delay longer than the
client's timeout, or a GraphQL ``errors`` answer with HTTP 200.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import graphql
import pytest

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "shared/railway/schema.json"
ACCOUNT_TOKEN = "acct-0f1e2d3c4b5a"
PROJECT_TOKEN = "proj-9a8b7c6d5e4f"

_schema: graphql.GraphQLSchema | None = None


def railway_schema() -> graphql.GraphQLSchema:
    """Railway's schema, built once (``Team.id``'s deprecation cleared, see RAILWAY.md)."""
    global _schema
    if _schema is None:
        if not SCHEMA_PATH.is_file():
            why = f"Railway schema not found at {SCHEMA_PATH} (CI copies shared/ beside the clone)"
            if os.environ.get("CI"):
                pytest.fail(why)  # CI must not go green without the contract tests
            pytest.skip(why)
        data = json.loads(SCHEMA_PATH.read_text())
        data = data.get("data", data)
        for t in data["__schema"]["types"]:
            for f in t.get("fields") or []:
                if f["name"] == "id":
                    f["isDeprecated"], f["deprecationReason"] = False, None
        _schema = graphql.build_client_schema(data)
    return _schema


def validate(query: str) -> list[str]:
    """Problems with ``query`` against Railway's schema (empty when valid)."""
    try:
        doc = graphql.parse(query)
    except graphql.GraphQLError as exc:
        return [exc.message]
    return [e.message for e in graphql.validate(railway_schema(), doc)]


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


@dataclass
class Fault:
    status: int | None = None  # answer with this HTTP status
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # sleep before answering (longer than the client's timeout: a timeout)
    error: str | None = None  # answer HTTP 200 with {"errors": [{"message": error}]}
    body: Any = None  # answer HTTP 200 with exactly this JSON (a shape the schema cannot make)


@dataclass
class Call:
    operation: str | None
    query: str
    variables: dict[str, Any]
    auth: str  # "bearer", "project" or "none" (never the token itself)
    at: float
    problems: list[str]


class RailwayState:
    """Scripted projects, deployments and logs, changed by tests and by mutations."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.project = {"id": str(uuid.uuid4()), "name": "shop"}
        self.services = [
            {"id": str(uuid.uuid4()), "name": "api"},
            {"id": str(uuid.uuid4()), "name": "worker"},
        ]
        self.environments = [
            {"id": str(uuid.uuid4()), "name": "production"},
            {"id": str(uuid.uuid4()), "name": "staging"},
        ]
        self.deployments: list[dict[str, Any]] = []
        self.logs: dict[str, list[dict[str, Any]]] = {}
        self.build_logs: dict[str, list[dict[str, Any]]] = {}
        self.after_restart = "SUCCESS"  # status a restarted deployment reaches
        self._clock = itertools.count()

    def service(self, name: str) -> dict[str, Any]:
        return next(s for s in self.services if s["name"] == name)

    def environment(self, name: str) -> dict[str, Any]:
        return next(e for e in self.environments if e["name"] == name)

    def deploy(
        self, service: str = "api", environment: str = "production", status: str = "SUCCESS"
    ) -> dict[str, Any]:
        """Add a deployment (the newest, so the service instance's latest)."""
        with self.lock:
            created = datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=next(self._clock))
            dep = {
                "id": str(uuid.uuid4()),
                "status": status,
                "createdAt": iso(created),
                "serviceId": self.service(service)["id"],
                "environmentId": self.environment(environment)["id"],
                "projectId": self.project["id"],
                "canRollback": status == "SUCCESS",
                "canRedeploy": True,
            }
            self.deployments.append(dep)
            return dep

    def log(
        self,
        deployment_id: str,
        message: str,
        *,
        at: str | None = None,
        severity: str | None = "info",
        build: bool = False,
    ) -> dict[str, Any]:
        line = {
            "timestamp": at or iso(datetime.now(UTC)),
            "message": message,
            "severity": severity,
            "attributes": [{"key": "level", "value": severity or ""}],
        }
        with self.lock:
            (self.build_logs if build else self.logs).setdefault(deployment_id, []).append(line)
        return line

    def find(self, deployment_id: str) -> dict[str, Any]:
        for dep in self.deployments:
            if dep["id"] == deployment_id:
                return dep
        raise graphql.GraphQLError("Deployment not found")

    # -- resolvers (graphql-core calls a root value's callables with info and arguments) ---------

    def root(self) -> dict[str, Any]:
        def edges(items: list[dict[str, Any]]) -> dict[str, Any]:
            return {"edges": [{"node": item} for item in items]}

        def project(info: Any, id: str) -> dict[str, Any]:
            if id != self.project["id"]:
                raise graphql.GraphQLError("Project not found")
            return {
                **self.project,
                "services": edges(self.services),
                "environments": edges(self.environments),
            }

        def latest(environment_id: str, service_id: str) -> dict[str, Any] | None:
            mine = [
                d
                for d in self.deployments
                if d["serviceId"] == service_id and d["environmentId"] == environment_id
            ]
            return max(mine, key=lambda d: d["createdAt"]) if mine else None

        def service_instance(info: Any, environmentId: str, serviceId: str) -> dict[str, Any]:
            return {"latestDeployment": latest(environmentId, serviceId)}

        def deployments(
            info: Any, input: dict[str, Any], first: int | None = None, **_: Any
        ) -> dict[str, Any]:
            found = [
                d
                for d in self.deployments
                if all(
                    d[k] == input[k]
                    for k in ("projectId", "serviceId", "environmentId")
                    if input.get(k)
                )
            ]
            wanted = (input.get("status") or {}).get("in")
            if wanted:
                found = [d for d in found if d["status"] in wanted]
            found.sort(key=lambda d: d["createdAt"], reverse=True)
            return edges(found[: first or 100])

        def logs_of(store: dict[str, list[dict[str, Any]]]) -> Any:
            def resolve(
                info: Any,
                deploymentId: str,
                startDate: str | None = None,
                limit: int | None = None,
                filter: str | None = None,
                endDate: str | None = None,
            ) -> list[dict[str, Any]]:
                self.find(deploymentId)
                lines = sorted(store.get(deploymentId, []), key=lambda x: x["timestamp"])
                if filter and filter.startswith("@level:"):
                    lines = [x for x in lines if x["severity"] == filter.split(":", 1)[1]]
                elif filter:
                    lines = [x for x in lines if filter in x["message"]]
                if startDate is not None:
                    return [x for x in lines if x["timestamp"] >= startDate][: limit or 100]
                return lines[-(limit or 100) :]

            return resolve

        def restart(info: Any, id: str) -> bool:
            self.find(id)["status"] = self.after_restart
            return True

        def new_from(old: dict[str, Any]) -> dict[str, Any]:
            svc = next(s["name"] for s in self.services if s["id"] == old["serviceId"])
            env = next(e["name"] for e in self.environments if e["id"] == old["environmentId"])
            return self.deploy(svc, env, status="SUCCESS")

        def redeploy(info: Any, id: str, usePreviousImageTag: bool | None = None) -> Any:
            return new_from(self.find(id))

        def rollback(info: Any, id: str) -> bool:
            old = self.find(id)
            if not old["canRollback"]:
                raise graphql.GraphQLError("Deployment cannot be rolled back")
            new = new_from(old)
            new["rolledBackFrom"] = id
            return True

        def instance_redeploy(info: Any, environmentId: str, serviceId: str) -> bool:
            dep = latest(environmentId, serviceId)
            if dep is None:
                raise graphql.GraphQLError("No deployment to redeploy")
            new_from(dep)
            return True

        def project_token(info: Any) -> dict[str, Any]:
            if info.context["auth"] != "project":
                raise graphql.GraphQLError("Project Token not found")
            return {
                "projectId": self.project["id"],
                "environmentId": self.environment("production")["id"],
            }

        return {
            "project": project,
            "serviceInstance": service_instance,
            "deployments": deployments,
            "deploymentLogs": logs_of(self.logs),
            "buildLogs": logs_of(self.build_logs),
            "deploymentRestart": restart,
            "deploymentRedeploy": redeploy,
            "deploymentRollback": rollback,
            "serviceInstanceRedeploy": instance_redeploy,
            "projectToken": project_token,
        }


class RailwayServer:
    """The HTTP side: auth, faults, validation, execution; records every call."""

    def __init__(self) -> None:
        self.state = RailwayState()
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/graphql/v2"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def start(self) -> RailwayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def ops(self, name: str | None = None) -> list[Call]:
        """Calls whose root field (or operation name) matches ``name``."""
        return [
            c
            for c in self.calls
            if name is None or name in (c.operation or "") or f"{name}(" in c.query
        ]

    @property
    def invalid(self) -> list[Call]:
        return [c for c in self.calls if c.problems]

    def _answer(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        auth = "none"
        bearer = headers.get("authorization", "")
        if bearer == f"Bearer {ACCOUNT_TOKEN}":
            auth = "bearer"
        elif headers.get("project-access-token") == PROJECT_TOKEN:
            auth = "project"
        req = json.loads(body)
        query, variables = req["query"], req.get("variables") or {}
        problems = validate(query)
        op = graphql.get_operation_ast(graphql.parse(query)) if not problems else None
        with self._lock:
            self.calls.append(
                Call(
                    op.name.value if op and op.name else None,
                    query,
                    variables,
                    auth,
                    time.monotonic(),
                    problems,
                )
            )
            fault = self.faults.pop(0) if self.faults else None
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status is not None:
                return fault.status, fault.headers, {"message": "simulated failure"}
            if fault.body is not None:
                return 200, {}, fault.body
            if fault.error is not None:
                return 200, {}, {"errors": [{"message": fault.error, "path": None}]}
        if problems:
            return 400, {}, {"errors": [{"message": p} for p in problems]}
        if auth == "none":
            return 200, {}, {"errors": [{"message": "Not Authorized"}], "data": None}
        with self.state.lock:
            result = graphql.graphql_sync(
                railway_schema(),
                query,
                root_value=self.state.root(),
                variable_values=variables,
                context_value={"auth": auth},
            )
        out: dict[str, Any] = {"data": result.data}
        if result.errors:
            out["errors"] = [{"message": e.message, "path": e.path} for e in result.errors]
        return 200, {}, out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, payload = server._answer(body, headers)
                data = json.dumps(payload).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def serve_railway() -> Iterator[RailwayServer]:
    """Body of a ``railway`` fixture: a started server, stopped and checked afterwards."""
    railway_schema()  # skips here, in the test's thread, when the schema is not beside the clone
    server = RailwayServer().start()
    yield server
    server.stop()
    assert not server.invalid, [(c.query, c.problems) for c in server.invalid]


def railway_config(server: RailwayServer, **extra: Any) -> dict[str, Any]:
    """The ``railway:`` section pointing Guard at ``server`` with fast retries.

    The timeout is generous: a test that wants one (a slow-answer fault) sets its own, so a
    loaded CI machine's slow answer never consumes a fault meant for the next attempt.
    """
    return {
        "token": ACCOUNT_TOKEN,
        "api_url": server.url,
        "project_id": server.state.project["id"],
        "environment_id": server.state.environment("production")["id"],
        "max_requests_per_hour": 100000,
        "max_requests_per_second": 1000,
        "timeout": 5.0,
        "retries": 2,
        "backoff": 0.05,
        **extra,
    }
