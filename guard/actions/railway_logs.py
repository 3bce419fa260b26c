"""``railway.logs SERVICE``: a deployment's status and its last log lines, as evidence.

A crashed or failed Railway deployment says why in its own logs (the deploy logs of a crash,
the build logs of a build that failed); the human asked to restart or roll it back should
read them first. The deployment is the one the incident is about (as the other Railway
actions find it), its lines the last ``tail`` (at most ``MAX_TAIL``), redacted by the step
runner like every action's message. Nothing is changed. Tested in
tests/railway/test_railway_starter.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard.actions.base import ActionError, ActionResult, tail_arg
from guard.actions.railway import RailwayAction
from guard.railway.client import RailwayClient
from guard.railway.models import Target
from guard.util.textsafe import line_tail

MAX_TAIL = 200


class Logs(RailwayAction):
    name = "railway.logs"
    description = "a Railway deployment's status and last log lines (evidence; changes nothing)"

    async def act(
        self,
        client: RailwayClient,
        target: Target,
        args: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> ActionResult:
        tail = tail_arg("railway.logs", args, 30, MAX_TAIL)
        dep = await self.deployment_id(client, target, args, details)
        if dep is None:
            raise ActionError(f"{target.label} has no deployment to read")
        build = str(args.get("build", "")).lower() in ("1", "true", "yes")
        read = client.build_logs if build else client.deployment_logs
        lines = await read(dep, limit=tail)
        status = details.get("status") if details.get("deployment_id") == dep else None
        if status is None:
            latest = await client.latest_deployment(target.environment_id, target.service_id)
            status = latest.status.value if latest and latest.id == dep else "unknown"
        text = "\n".join(f"{line.timestamp} {line.message}" for line in lines[-tail:])
        which = "build" if build else "deploy"
        head = f"deployment {dep} of {target.label}: {status}; its last {which} log lines:"
        return ActionResult(
            True,
            f"{head}\n{line_tail(text, 8000) or '(no log lines)'}",
            self.base_details(target, deployment_id=dep, status=status, lines=len(lines)),
        )


ACTIONS = [Logs()]
