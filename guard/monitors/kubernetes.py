"""Watch pods in one namespace (optionally by label selector) through the Kubernetes API.

``follow`` is an informer in miniature: list the pods, then watch from the list's
resourceVersion, keeping a map of the pods it knows and re-judging a workload on every event
(see ``guard.k8s.pods``). The watch runs in a worker thread (the official client blocks). When
the server ends the stream (its ``timeoutSeconds``) or the connection drops mid-stream, the
watch resumes from the last resourceVersion seen, so no event is missed or repeated; when the
server answers 410 Gone (the version was compacted away), it lists again. Only when the API
cannot be reached at all does ``follow`` raise, for the runtime to reconnect with backoff.

``check`` lists pods (it also catches pods that stay not-ready without any event) and reports
Warning events not reported before; the state keeps each event's uid and count, so a repeated
event counts once per occurrence and a restart does not re-report it.

A crash signal carries the last lines of the container instance that died
(``guard.monitors.kubernetes_previous``). With ``logs`` rules, ``follow`` also follows the
running containers' logs (``guard.monitors.kubernetes_logs``); their positions share the
monitor's state with the events.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from guard.config import Settings
from guard.domain.exceptions import KubernetesError, MonitorError
from guard.domain.records import Observation, Severity, Signal
from guard.k8s.client import KubeClient, WatchExpired
from guard.k8s.pods import problems, ready, workload
from guard.monitors.base import Emit
from guard.monitors.kubernetes_previous import PreviousLines
from guard.playbooks.models import KubernetesMonitorSpec

RECONNECTS = 3  # consecutive failed reconnects before follow() gives up
RESYNC = 10.0  # seconds between looks for containers whose log stream has ended


def _snake(reason: str) -> str:
    out = "".join(f"_{c.lower()}" if c.isupper() else c for c in reason).lstrip("_")
    return "".join(c if c.isalnum() else "_" for c in out)


class KubernetesMonitor:
    type = "kubernetes"

    def __init__(
        self,
        spec: KubernetesMonitorSpec,
        settings: Settings,
        *,
        kube: KubeClient | None = None,
        watch_timeout: int = 300,
    ) -> None:
        self.spec = spec
        self.settings = settings.kubernetes
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self.watch_timeout = watch_timeout
        self._kube = kube
        self._pods: dict[str, dict[str, Any]] = {}  # name -> pod, as the watch knows them
        self._rv: str | None = None  # last resourceVersion processed
        self.relists = 0  # 410 Gone recoveries, and reconnects (for tests and logs)
        self.reconnects = 0
        self.previous = PreviousLines(spec.namespace, spec.previous_tail)
        self._logs = None
        if spec.logs:
            from guard.monitors.kubernetes_logs import pod_logs

            self._logs = pod_logs(spec)

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Log positions: resume from the stored ones, or start from now."""
        return None if self._logs is None else self._logs.baseline(state)

    def _client(self) -> KubeClient:
        if self._kube is None:
            try:
                self._kube = KubeClient(self.settings)
            except KubernetesError as exc:
                raise MonitorError(str(exc)) from None
        return self._kube

    async def close(self) -> None:
        if self._logs is not None:
            await self._logs.aclose()
        if self._kube is not None:
            with contextlib.suppress(Exception):
                self._kube.close()
            self._kube = None

    # -- judging workloads ----------------------------------------------------------------------

    def _workload_signals(self, pods: list[dict[str, Any]], wkind: str, wname: str) -> list[Signal]:
        ns = self.spec.namespace
        target = f"{ns}/{wname}"
        base = {"namespace": ns, "workload_kind": wkind, "workload": wname}
        if wkind == "Deployment":
            base["deployment"] = wname
        signals = []
        for pod in pods:
            name = pod["metadata"]["name"]
            for p in problems(pod, not_ready_after=self.spec.not_ready_after):
                signals.append(
                    Signal(
                        monitor_id=self.id,
                        source="kubernetes",
                        target=target,
                        kind=p.kind,
                        message=f"{wkind} {target}: {p.message}",
                        severity=self.spec.severity,
                        details={
                            **base,
                            "pod": name,
                            **p.details,
                            "resource_version": pod["metadata"].get("resourceVersion"),
                        },
                    )
                )
        if not signals and pods and all(ready(p) for p in pods):
            signals.append(
                Signal(
                    monitor_id=self.id,
                    source="kubernetes",
                    target=target,
                    kind="k8s_workload_ready",
                    status="ok",
                    message=f"{wkind} {target}: {len(pods)} pod(s) ready",
                    details={**base, "pods": sorted(p["metadata"]["name"] for p in pods)},
                )
            )
        return signals

    def _judge(
        self, pods: list[dict[str, Any]], only: tuple[str, str] | None = None
    ) -> list[Signal]:
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for pod in pods:
            groups.setdefault(workload(pod), []).append(pod)
        if only is not None:
            groups = {only: groups.get(only, [])}
        return [
            s for (k, n), members in groups.items() for s in self._workload_signals(members, k, n)
        ]

    # -- polling --------------------------------------------------------------------------------

    async def check(self, state: Mapping[str, Any]) -> Observation:
        try:
            obs = await asyncio.to_thread(self._poll, state)
        except KubernetesError as exc:
            raise MonitorError(f"kubernetes {self.spec.namespace}: {exc}") from None
        if self._logs is None:
            return obs
        self._logs.carry = obs.state  # the log positions are this state's too
        return Observation(obs.signals, self._logs.state())

    def _poll(self, state: Mapping[str, Any]) -> Observation:
        kube = self._client()
        pods = kube.list_pods(self.spec.namespace, self.spec.selector).get("items") or []
        by_name = {p["metadata"]["name"]: p for p in pods}
        signals = self.previous.add_to(kube, self._judge(pods), by_name)
        new_state: dict[str, Any] = {"events": {}}
        first = "events" not in state  # a first check reports no event that happened before
        if self.spec.warnings:
            seen: dict[str, int] = dict(state.get("events") or {})
            names = {p["metadata"]["name"]: workload(p)[1] for p in pods}
            for ev in kube.list_warning_events(self.spec.namespace).get("items") or []:
                involved = ev.get("involvedObject") or {}
                if self.spec.selector and involved.get("name") not in names:
                    continue
                uid, count = ev["metadata"]["uid"], int(ev.get("count") or 1)
                new_state["events"][uid] = count
                new = count - seen.get(uid, 0)
                if not first and new > 0:
                    signals.append(self._event_signal(ev, names, new))
        return Observation(signals, new_state)

    def _event_signal(self, ev: dict[str, Any], names: dict[str, str], new: int) -> Signal:
        involved = ev.get("involvedObject") or {}
        obj = str(involved.get("name", "?"))
        reason = str(ev.get("reason") or "Warning")
        target = f"{self.spec.namespace}/{names.get(obj, obj)}"
        return Signal(
            monitor_id=self.id,
            source="kubernetes",
            target=target,
            kind=f"k8s_event_{_snake(reason)}",  # guard.telemetry.metrics counts it as k8s_event
            severity=Severity.warning,
            message=f"{reason}: {ev.get('message', '')}"[:1000],
            count=new,
            details={
                "namespace": self.spec.namespace,
                "reason": reason,
                "object_kind": involved.get("kind"),
                "object": obj,
                "event": ev["metadata"]["name"],
            },
        )

    # -- the watch ------------------------------------------------------------------------------

    async def follow(self, emit: Emit) -> None:
        """List, then watch until cancelled; raise ``MonitorError`` if the API is gone."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stopping = threading.Event()
        kube = self._client()

        def put(item: tuple[str, Any]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while we were blocked
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def pump(rv: str | None) -> None:
            try:
                watch(rv)
            except Exception as exc:  # anything unforeseen ends follow(), never the thread
                put(("error", exc))

        def watch(rv: str | None) -> None:
            failures = 0
            while not stopping.is_set():
                try:
                    if rv is None:
                        listing = kube.list_pods(self.spec.namespace, self.spec.selector)
                        rv = str(listing["metadata"]["resourceVersion"])
                        put(("list", listing))
                    for event in kube.watch_pods(
                        self.spec.namespace, self.spec.selector, rv, self.watch_timeout
                    ):
                        if stopping.is_set():
                            return
                        failures = 0
                        rv = str(event["object"]["metadata"].get("resourceVersion") or rv)
                        put(("event", event))
                except WatchExpired:
                    rv = None
                    put(("relist", None))
                except KubernetesError as exc:
                    failures += 1
                    if failures > RECONNECTS:
                        put(("error", exc))
                        return
                    put(("reconnect", str(exc)))
                    stopping.wait(min(0.1 * 2**failures, 5.0))

        thread = threading.Thread(
            target=pump, args=(self._rv,), daemon=True, name=f"k8s-watch-{self.id}"
        )
        thread.start()
        logs = None
        if self._logs is not None:
            await self._logs.bind()
            logs = asyncio.create_task(self._logs.run(emit))
        try:
            while True:
                try:
                    what, item = await asyncio.wait_for(queue.get(), RESYNC if logs else None)
                except TimeoutError:  # quiet: follow again what stopped being followed
                    what, item = "resync", None
                if logs is not None and logs.done():
                    logs.result()  # the counting failed: say so (follow is started again)
                if what == "error":
                    raise MonitorError(f"kubernetes watch in {self.spec.namespace}: {item}")
                if what == "relist":
                    self.relists += 1
                elif what == "reconnect":
                    self.reconnects += 1
                elif what == "list":
                    self._pods = {p["metadata"]["name"]: p for p in item.get("items") or []}
                    self._rv = str(item["metadata"]["resourceVersion"])
                    await self._report(self._judge(list(self._pods.values())), emit)
                elif what == "event":
                    await self._apply_event(item, emit)
                elif what == "resync":
                    self._sync_logs(kube)
        finally:
            stopping.set()
            if logs is not None:
                logs.cancel()
                await asyncio.gather(logs, return_exceptions=True)
                assert self._logs is not None
                await self._logs.aclose()

    def _sync_logs(self, kube: KubeClient) -> None:
        if self._logs is not None:
            self._logs.sync(kube, list(self._pods.values()))

    async def _report(self, signals: list[Signal], emit: Emit) -> None:
        """Emit ``signals`` with the lines of any crashed container; follow the logs."""
        kube = self._client()
        self._sync_logs(kube)
        if signals:
            pods = dict(self._pods)
            await emit(
                Observation(await asyncio.to_thread(self.previous.add_to, kube, signals, pods))
            )

    async def _apply_event(self, event: dict[str, Any], emit: Emit) -> None:
        obj = event["object"]
        self._rv = str(obj["metadata"].get("resourceVersion") or self._rv)
        if event["type"] == "BOOKMARK":
            return
        name = obj["metadata"]["name"]
        if event["type"] == "DELETED":
            self._pods.pop(name, None)
        else:
            self._pods[name] = obj
        await self._report(self._judge(list(self._pods.values()), only=workload(obj)), emit)
