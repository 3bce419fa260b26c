"""Docker actions, performed by Guard through the engine API (the sandbox never sees the
socket): ``docker.restart``, ``docker.start``, ``docker.stop`` and ``docker.logs`` (evidence)."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from docker.errors import DockerException, NotFound

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.util.docker_client import Timeouts, docker_client
from guard.util.textsafe import line_tail


def container_name(args: Mapping[str, Any], ctx: ActionContext) -> str:
    name = args.get("container") or (ctx.incident or {}).get("target")
    if not name:
        raise ActionError("which container? give container=NAME")
    return str(name)


def engine() -> Any:
    try:
        return docker_client(Timeouts.call)
    except DockerException as exc:
        raise ActionError(str(exc)) from None  # names DOCKER_HOST and the fix


class DockerAction(ABC):
    params: tuple[str, ...] = ("container",)
    name = ""
    description = ""

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        name = container_name(args, ctx)
        return await asyncio.to_thread(self._sync, name, args)

    def _sync(self, name: str, args: Mapping[str, Any]) -> ActionResult:
        client = engine()
        try:
            container = client.containers.get(name)
            return self.apply(container, args)
        except NotFound:
            raise ActionError(f"no container named {name!r}") from None
        except DockerException as exc:
            raise ActionError(f"{self.name} {name}: {exc}") from None
        finally:
            client.close()

    @abstractmethod
    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        """What the action does to what it found."""


class Restart(DockerAction):
    name = "docker.restart"
    description = "restart a container (stop with a grace period, then start)"

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        container.restart(timeout=int(args.get("timeout", 10)))
        container.reload()
        return ActionResult(
            True,
            f"restarted {container.name} (now {container.status})",
            {"status": container.status},
        )


class Start(DockerAction):
    name = "docker.start"
    description = "start a stopped container"

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        container.start()
        container.reload()
        return ActionResult(
            True, f"started {container.name} (now {container.status})", {"status": container.status}
        )


class Stop(DockerAction):
    name = "docker.stop"
    description = "stop a container (e.g. to end a restart loop)"

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        container.stop(timeout=int(args.get("timeout", 10)))
        container.reload()
        return ActionResult(True, f"stopped {container.name}", {"status": container.status})


class Logs(DockerAction):
    name = "docker.logs"
    description = "the container's last log lines (evidence; changes nothing)"

    def apply(self, container: Any, args: Mapping[str, Any]) -> ActionResult:
        tail = int(args.get("tail", 50))
        text = container.logs(tail=tail, stdout=True, stderr=True).decode("utf-8", "replace")
        state = container.attrs.get("State") or {}
        details = {
            "exit_code": state.get("ExitCode"),
            "status": state.get("Status"),
            "restart_count": container.attrs.get("RestartCount"),
        }
        return ActionResult(True, line_tail(text, 8000) or "(no log output)", details)


ACTIONS = [Restart(), Start(), Stop(), Logs()]
