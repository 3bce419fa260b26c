"""Watch containers on the local Docker engine by polling and by following its events stream.

Polling (``check``) classifies every selected container's state: exited (with its exit code),
OOM-killed, restarting, unhealthy, paused, or fine. Following (``follow``) reacts to ``die``,
``oom``, ``start`` and ``health_status`` events within milliseconds, and resumes from the last
event's time after the stream drops, so a reconnect neither misses nor repeats a kill. The SDK
is blocking, so its calls run in worker threads; errors become ``MonitorError``.
With ``rules``, ``follow`` also reads the selected containers' stdout and stderr
(``guard.monitors.docker_logs``), attaching to each container that starts later.
A ``die`` that the restart policy answers is ``container_restarting``, and the restart's
``start`` counts as running only once it held (``guard.monitors.docker_restarts``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from docker.errors import DockerException, NotFound

from guard.domain.exceptions import MonitorError
from guard.domain.records import Observation, Severity, Signal, utcnow
from guard.harness import spans
from guard.monitors.base import Emit
from guard.monitors.docker_logs import ContainerLogs
from guard.monitors.docker_restarts import (
    STAYS_UP,
    KnownPolicies,
    RestartLoops,
    restarted_by_policy,
    still_that_start,
)
from guard.playbooks.models import DockerMonitorSpec
from guard.util.docker_client import EngineUnreachable, Timeouts, docker_client
from guard.util.rollback_names import is_rollback_aside


def _engine_error(exc: Exception) -> MonitorError:
    if isinstance(exc, EngineUnreachable):  # it names DOCKER_HOST and the fix for its kind
        return MonitorError(str(exc))
    return MonitorError(
        f"cannot reach the Docker engine: {exc} (is dockerd running and "
        "/var/run/docker.sock mounted? see docs/DEPLOY.md)"
    )


class DockerMonitor:
    """Containers chosen by label and/or name."""

    type = "docker"

    def __init__(self, spec: DockerMonitorSpec, *, client: Any = None) -> None:
        self.spec = spec
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self._client = client
        self._since: float | None = None  # time of the last event seen, to resume from
        self._oom: set[str] = set()  # containers with an ``oom`` event and no ``die`` since
        self._loops = RestartLoops()  # containers in a restart policy's loop
        self._policies = KnownPolicies()  # a ``die`` of a ``no`` policy needs no inspect
        self._filters: dict[str, Any] = {}
        if spec.selector.labels:
            self._filters["label"] = spec.selector.labels
        if spec.selector.name:
            self._filters["name"] = spec.selector.name
        self._logs = _container_logs(spec) if spec.rules else None

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Log positions: resume from the stored ones, or start from now."""
        if self._logs is None:
            return None
        if state:
            self._logs.restore(dict(state))
            return None
        return self._logs.state()

    def _docker(self) -> Any:
        if self._client is None:
            try:
                self._client = docker_client(Timeouts.monitor)
            except DockerException as exc:
                self._client = None
                raise _engine_error(exc) from None
        return self._client

    def _signal(
        self,
        name: str,
        kind: str,
        message: str,
        *,
        ok: bool = False,
        severity: Severity | None = None,
        **details: Any,
    ) -> Signal:
        return Signal(
            monitor_id=self.id,
            source="docker",
            target=name,
            kind=kind,
            message=message,
            status="ok" if ok else "firing",
            severity=severity or self.spec.severity,
            details=details,
        )

    def classify(
        self, name: str, state: Mapping[str, Any], attrs: Mapping[str, Any] | None = None
    ) -> Signal | None:
        """One signal for a container's ``State`` (from inspect); None for a fresh 'created'.
        With the whole inspect ``attrs``, a running container's signal carries what tells one
        start from the next (``started_at``, ``restart_count``) and its restart policy, so
        verification can see a restart between two looks."""
        status = state.get("Status", "")
        code = state.get("ExitCode")
        health = (state.get("Health") or {}).get("Status")
        if state.get("OOMKilled") and status != "running":
            return self._signal(
                name,
                "container_oom_killed",
                f"container {name} was OOM-killed",
                exit_code=code,
                status=status,
            )
        if status == "restarting" or state.get("Restarting"):
            return self._signal(
                name,
                "container_restarting",
                f"container {name} is restarting (last exit code {code})",
                exit_code=code,
                status=status,
            )
        if status in ("exited", "dead"):
            return self._signal(
                name,
                "container_exited",
                f"container {name} exited with code {code}",
                exit_code=code,
                status=status,
                error=state.get("Error") or None,
            )
        if status == "paused":
            return self._signal(
                name, "container_paused", f"container {name} is paused", status=status
            )
        if health == "unhealthy":
            log = (state.get("Health") or {}).get("Log") or []
            last = (log[-1].get("Output") or "").strip()[:500] if log else ""
            return self._signal(
                name,
                "container_unhealthy",
                f"container {name} is unhealthy",
                status=status,
                health_output=last,
            )
        if status == "running":
            return self._signal(
                name,
                "container_running",
                f"container {name} is running",
                ok=True,
                status=status,
                health=health,
                **_restart_facts(state, attrs),
            )
        return None

    async def check(self, state: Mapping[str, Any]) -> Observation:
        return await asyncio.to_thread(self._poll)

    async def check_target(self, target: str) -> Observation:
        """One container by name: one ``inspect``, where ``check`` lists the selection and
        inspects each container in it."""
        return await asyncio.to_thread(self._poll_one, target)

    def _poll_one(self, name: str) -> Observation:
        asked = utcnow()
        try:
            attrs = self._docker().api.inspect_container(name)
        except NotFound:
            return Observation([])
        except DockerException as exc:
            raise _engine_error(exc) from None
        self._policies.learn(str(attrs.get("Id", "")), attrs)
        sig = self.classify(
            str(attrs.get("Name") or name).lstrip("/"), attrs.get("State") or {}, attrs
        )
        return Observation([replace(sig, observed_at=asked)] if sig is not None else [])

    def _poll(self) -> Observation:
        """Every selected container's state, each signal stamped with when the engine was
        asked: what it answered may be older than a ``die`` the events stream has since
        brought, and triage ignores a pass observed before the last failure."""
        client = self._docker()
        asked = utcnow()
        try:
            containers = client.containers.list(all=True, filters=self._filters)
        except DockerException as exc:
            raise _engine_error(exc) from None
        signals = []
        for c in containers:
            if is_rollback_aside(c.name):
                continue  # a rollback's old container, removed once the new one started
            self._policies.learn(c.id, c.attrs)
            sig = self.classify(c.name, c.attrs.get("State") or {}, c.attrs)
            if sig is not None:
                signals.append(replace(sig, observed_at=asked))
        return Observation(signals)

    # -- the events stream ----------------------------------------------------------------------

    async def follow(self, emit: Emit) -> None:
        """Follow container events until cancelled; raise ``MonitorError`` when the stream drops."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | Exception | None] = asyncio.Queue()
        since = self._since or time.time()
        client = await asyncio.to_thread(self._docker)
        filters = {**self._filters, "type": "container"}
        try:
            stream = await asyncio.to_thread(
                client.events, decode=True, filters=filters, since=since
            )
        except DockerException as exc:
            raise _engine_error(exc) from None
        stopping = threading.Event()

        def pump() -> None:
            try:
                for event in stream:
                    if spans.enabled() and event.get("Action") == "die":
                        spans.mark("event.received", _event_name(event))
                    loop.call_soon_threadsafe(queue.put_nowait, event)
                    if stopping.is_set():
                        break
                loop.call_soon_threadsafe(queue.put_nowait, None)
            except Exception as exc:  # the stream broke: hand it to the async side
                if not stopping.is_set():
                    loop.call_soon_threadsafe(queue.put_nowait, exc)

        thread = threading.Thread(target=pump, name=f"docker-events-{self.id}", daemon=True)
        thread.start()
        logs = None if self._logs is None else asyncio.create_task(self._follow_logs(emit))
        try:
            while True:
                item = await queue.get()
                if item is None:
                    raise MonitorError("the Docker events stream ended (engine restarted?)")
                if isinstance(item, Exception):
                    raise _engine_error(item)
                self._since = item.get("time", since)
                if not self._selects(item):
                    continue
                self._policies.event(item)
                if logs is not None and item.get("Action") == "start":
                    await self._attach(str(item.get("id", "")))
                sig = await self._judge(item, emit)
                if sig is not None:
                    await emit(Observation([sig]))
                    spans.mark("signal.queued", sig.target)
        finally:
            stopping.set()
            await self._loops.aclose()
            with contextlib.suppress(Exception):
                stream.close()
            if logs is not None:
                logs.cancel()
                await asyncio.gather(logs, return_exceptions=True)
                assert self._logs is not None
                await self._logs.aclose()

    def _selects(self, event: Mapping[str, Any]) -> bool:
        """Whether the event is about a selected container: the engine's events API has no
        name filter (it ignores one), so a name selector is applied here. The container a
        ``docker.rollback`` put aside is Guard's own doing, never selected."""
        name, actor = self.spec.selector.name, _event_name(event)
        return (not name or name in actor) and not is_rollback_aside(actor)

    async def _follow_logs(self, emit: Emit) -> None:
        """Attach to every selected container, then count their lines until cancelled."""
        assert self._logs is not None
        client = self._docker()
        await self._logs.bind(client.api)
        found = await asyncio.to_thread(client.containers.list, all=True, filters=self._filters)
        for c in found:
            await self._attach(c.id)
        await self._logs.run(emit)

    async def _attach(self, container_id: str) -> None:
        attrs = await asyncio.to_thread(self._inspect, container_id)  # (learns its policy)
        if attrs is None:
            return
        assert self._logs is not None
        name = str(attrs.get("Name") or container_id).lstrip("/")
        self._logs.attach(container_id, name, bool((attrs.get("Config") or {}).get("Tty")))

    def _inspect(self, container_id: str) -> dict[str, Any] | None:
        try:
            attrs = dict(self._docker().api.inspect_container(container_id))
        except DockerException:  # gone already, or the engine away: the event alone decides
            return None
        self._policies.learn(container_id, attrs)
        return attrs

    async def _judge(self, event: Mapping[str, Any], emit: Emit) -> Signal | None:
        """The event's signal, knowing whether the restart policy answered a ``die``; a start
        by the restart policy is judged later (``_stays_up``) and gives none now."""
        action = str(event.get("Action") or event.get("status") or "")
        cid = str(event.get("id", ""))
        if action == "die" and cid not in self._oom:
            known = self._policies.never_restarts(cid)  # then no inspect: the exit is an exit
            attrs = None if known else await asyncio.to_thread(self._inspect, cid)
            looping = attrs is not None and restarted_by_policy(attrs, event.get("timeNano"))
            self._loops.died(cid, restarting=looping)
            if looping:
                assert attrs is not None
                return self._from_event(event, restarts=attrs)
        elif action == "start" and self._loops.started(cid, lambda: self._stays_up(event, emit)):
            self._oom.discard(cid)
            return None
        return self._from_event(event)

    async def _stays_up(self, event: Mapping[str, Any], emit: Emit) -> None:
        """Report a start by the restart policy as running once it lasted ``STAYS_UP``."""
        await asyncio.sleep(STAYS_UP)
        cid = str(event.get("id", ""))
        attrs = await asyncio.to_thread(self._inspect, cid)
        if not still_that_start(attrs, event.get("timeNano")):
            return  # it died again (its ``die`` says so) or is gone
        assert attrs is not None
        self._loops.held(cid)
        name = _event_name(event)
        state = attrs.get("State") or {}
        await emit(
            Observation(
                [
                    self._signal(
                        name,
                        "container_running",
                        f"container {name} is running (up {STAYS_UP:g}s after its restart "
                        "policy restarted it)",
                        ok=True,
                        event="start",
                        **_restart_facts(state, attrs),
                    )
                ]
            )
        )

    def _from_event(
        self, event: Mapping[str, Any], restarts: Mapping[str, Any] | None = None
    ) -> Signal | None:
        action = str(event.get("Action") or event.get("status") or "")
        attrs = (event.get("Actor") or {}).get("Attributes") or {}
        name = _event_name(event)
        detected: dict[str, Any] = {"event": action, "event_time_ns": event.get("timeNano")}
        cid = str(event.get("id", ""))
        if action == "oom":
            self._oom.add(cid)
            return self._signal(
                name, "container_oom_killed", f"container {name} was OOM-killed", **detected
            )
        if action == "die":
            if cid in self._oom:  # the engine sends ``oom`` before the ``die`` it causes
                self._oom.discard(cid)
                return self._signal(
                    name,
                    "container_oom_killed",
                    f"container {name} was OOM-killed",
                    exit_code=attrs.get("exitCode"),
                    **detected,
                )
            raw = str(attrs.get("exitCode"))
            code: int | str = int(raw) if raw.isdigit() else raw
            if restarts is not None:  # the restart policy answered it: the same as the poll's
                return self._signal(
                    name,
                    "container_restarting",
                    f"container {name} is restarting (last exit code {code})",
                    exit_code=code,
                    restart_count=restarts.get("RestartCount"),
                    **detected,
                )
            return self._signal(
                name,
                "container_exited",
                f"container {name} exited with code {code}",
                exit_code=code,
                **detected,
            )
        if action == "start":
            self._oom.discard(cid)
            return self._signal(
                name, "container_running", f"container {name} is running", ok=True, **detected
            )
        if action.startswith("health_status"):
            if action.endswith("unhealthy"):
                return self._signal(
                    name, "container_unhealthy", f"container {name} is unhealthy", **detected
                )
            if action.endswith("healthy"):
                return self._signal(
                    name, "container_running", f"container {name} is healthy", ok=True, **detected
                )
        return None

    async def close(self) -> None:
        if self._logs is not None:
            await self._logs.aclose()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()


def _restart_facts(state: Mapping[str, Any], attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    """What tells one start of a container from the next, and its restart policy."""
    if attrs is None:
        return {}
    policy = ((attrs.get("HostConfig") or {}).get("RestartPolicy") or {}).get("Name") or "no"
    return {
        "started_at": state.get("StartedAt"),
        "restart_count": attrs.get("RestartCount"),
        "restart_policy": policy,
        "image": (attrs.get("Config") or {}).get("Image"),  # its previous: docker.rollback
        "image_id": attrs.get("Image"),
    }


def _event_name(event: Mapping[str, Any]) -> str:
    """The container an engine event is about (its name; its short id without one)."""
    attrs = (event.get("Actor") or {}).get("Attributes") or {}
    return str(attrs.get("name") or str(event.get("id", ""))[:12])


def _container_logs(spec: DockerMonitorSpec) -> ContainerLogs:
    from guard.monitors.logfile import Tally, groupers_of
    from guard.monitors.matcher import LineMatcher
    from guard.monitors.multiline import Framer

    return ContainerLogs(
        spec.id,
        list(spec.rules),
        LineMatcher([(r.pattern, r.ignore_case) for r in spec.rules]),
        groupers_of(spec),
        Framer(spec.multiline_spec),
        spec.max_line_bytes,
        lambda: Tally(spec.id, "", source="docker"),
    )
