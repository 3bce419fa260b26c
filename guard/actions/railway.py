"""Railway remediation actions: restart, redeploy and roll back a service's deployment.

Each action takes the service (name or id) and optionally the environment (name or id, default
``railway.environment_id``). Which deployment to act on: an explicit ``deployment_id``, else the
one the incident is about (a railway monitor puts ``deployment_id``/``service_id`` in its
details), else the service's latest deployment. Rollback goes to the last deployment that was
``SUCCESS``: one named by ``to``, else the one Guard itself last saw succeed (the monitor records
it in the incident as ``last_success_deployment_id``), else the newest ``SUCCESS`` deployment in
Railway's list that is not the one being replaced. Railway's own errors reach the human through
``ActionError`` with Railway's message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.domain.exceptions import RailwayError
from guard.railway.client import RailwayClient
from guard.railway.models import DeploymentStatus, Target
from guard.railway.targets import resolve_target


def _incident_details(ctx: ActionContext) -> Mapping[str, Any]:
    incident = ctx.incident or {}
    details = incident.get("details")
    return details if isinstance(details, Mapping) else incident


class RailwayAction(ABC):
    name = ""
    description = ""
    params = ("service", "environment")

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        details = _incident_details(ctx)
        service = args.get("service") or details.get("service_id") or details.get("service")
        if not service:
            raise ActionError(
                f"{self.name} needs a service (name or id), e.g. "
                f"'{self.name} api environment=production'"
            )
        environment = args.get("environment") or details.get("environment_id")
        try:
            async with RailwayClient(ctx.settings.railway) as client:
                target = await resolve_target(
                    client,
                    ctx.settings.railway,
                    str(service),
                    str(environment) if environment else None,
                )
                return await self.act(client, target, args, details)
        except RailwayError as exc:
            raise ActionError(f"{self.name} {service}: {exc}") from None

    @abstractmethod
    async def act(
        self,
        client: RailwayClient,
        target: Target,
        args: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> ActionResult:
        """What the action does to what it found."""

    async def deployment_id(
        self,
        client: RailwayClient,
        target: Target,
        args: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> str | None:
        if args.get("deployment_id"):
            return str(args["deployment_id"])
        if details.get("deployment_id") and details.get("service_id") in (None, target.service_id):
            return str(details["deployment_id"])
        latest = await client.latest_deployment(target.environment_id, target.service_id)
        return latest.id if latest else None

    @staticmethod
    def base_details(target: Target, **more: Any) -> dict[str, Any]:
        return {
            "service_id": target.service_id,
            "service": target.service_name,
            "environment_id": target.environment_id,
            "environment": target.environment_name,
            **more,
        }


class Restart(RailwayAction):
    name = "railway.restart"
    description = "Restart a Railway service's deployment (deploymentRestart), same image."

    async def act(
        self,
        client: RailwayClient,
        target: Target,
        args: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> ActionResult:
        dep = await self.deployment_id(client, target, args, details)
        if dep is None:
            raise ActionError(f"{target.label} has no deployment to restart")
        ok = await client.restart(dep)
        return ActionResult(
            ok,
            f"restarted Railway deployment {dep} of {target.label}"
            if ok
            else f"Railway refused to restart deployment {dep}",
            self.base_details(target, deployment_id=dep, mutation="deploymentRestart"),
        )


class Redeploy(RailwayAction):
    name = "railway.redeploy"
    description = "Redeploy a Railway service's deployment as a new deployment."

    async def act(
        self,
        client: RailwayClient,
        target: Target,
        args: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> ActionResult:
        dep = await self.deployment_id(client, target, args, details)
        if dep is None:
            ok = await client.redeploy_service_instance(target.environment_id, target.service_id)
            return ActionResult(
                ok,
                f"redeployed {target.label} from its source",
                self.base_details(target, mutation="serviceInstanceRedeploy"),
            )
        new = await client.redeploy(dep)
        return ActionResult(
            True,
            f"redeployed {target.label}: deployment {new.id} ({new.status.value}) replaces {dep}",
            self.base_details(
                target, deployment_id=dep, new_deployment_id=new.id, mutation="deploymentRedeploy"
            ),
        )


class Rollback(RailwayAction):
    name = "railway.rollback"
    description = "Roll a Railway service back to its last deployment that was SUCCESS."

    async def act(
        self,
        client: RailwayClient,
        target: Target,
        args: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> ActionResult:
        current = await self.deployment_id(client, target, args, details)
        to = args.get("to") or details.get("last_success_deployment_id")
        if to and str(to) != current:
            to, how = str(to), "named" if args.get("to") else "last seen SUCCESS by Guard"
        else:
            found = await client.deployments(
                target.project_id,
                target.service_id,
                target.environment_id,
                statuses=[DeploymentStatus.SUCCESS],
            )
            candidates = [d for d in found if d.id != current and d.can_rollback]
            if not candidates:
                raise ActionError(
                    f"{target.label} has no earlier SUCCESS deployment to roll back to "
                    "(Railway marks superseded deployments REMOVED; pass to=<deployment id>)"
                )
            to, how = candidates[0].id, "newest SUCCESS in Railway"
        ok = await client.rollback(to)
        return ActionResult(
            ok,
            f"rolled {target.label} back to deployment {to} ({how})"
            if ok
            else f"Railway refused to roll back to {to}",
            self.base_details(
                target,
                deployment_id=current,
                rollback_to=to,
                chosen_by=how,
                mutation="deploymentRollback",
            ),
        )


ACTIONS = [Restart(), Redeploy(), Rollback()]
