"""Resolve what a playbook or a human names ("api" in "production") to Railway ids.

Names and ids are both accepted for services and environments. The project comes from
``railway.project_id`` (Railway injects ``RAILWAY_PROJECT_ID`` into every service, so Guard
running on Railway finds its own project), or from the project token's scope. The environment
defaults to ``railway.environment_id``, then to the project token's environment.
"""

from __future__ import annotations

from guard.config import RailwaySettings
from guard.domain.exceptions import RailwayError
from guard.railway.client import RailwayClient
from guard.railway.models import Named, Target


def _pick(kind: str, wanted: str, options: list[Named]) -> Named:
    for item in options:
        if wanted in (item.id, item.name):
            return item
    known = ", ".join(sorted(o.name for o in options)) or "none"
    raise RailwayError(f"no Railway {kind} named {wanted!r} in this project (known: {known})")


async def resolve_target(
    client: RailwayClient, settings: RailwaySettings, service: str, environment: str | None = None
) -> Target:
    """Ids and names of ``service`` in ``environment``; raises ``RailwayError`` naming the fix."""
    project_id = settings.project_id
    environment = environment or settings.environment_id
    if settings.token is None and settings.project_token is not None:
        scope = await client.project_token_scope()
        project_id = scope.project_id
        environment = environment or scope.environment_id
    if not project_id:
        raise RailwayError(
            "which Railway project? set railway.project_id "
            "(GUARD_RAILWAY__PROJECT_ID) or use a project token"
        )
    if not environment:
        raise RailwayError(
            f"which Railway environment for {service!r}? set environment: in the "
            "monitor or railway.environment_id"
        )
    project = await client.project(project_id)
    svc = _pick("service", service, project.services)
    env = _pick("environment", environment, project.environments)
    return Target(
        project_id=project.id,
        service_id=svc.id,
        service_name=svc.name,
        environment_id=env.id,
        environment_name=env.name,
    )
