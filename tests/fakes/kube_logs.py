"""Container logs for the fake API server (tests/fakes/kube.py), as the kubelet serves them.

``GET /api/v1/namespaces/{ns}/pods/{name}/log`` picks the container instance the way the
kubelet's ``validateContainerLogStatus`` does: ``previous=true`` is the last terminated
instance (400 ``previous terminated container "c" in pod "p" not found`` without one);
otherwise the running instance, else the last terminated one; a container that only waits is a
400 ``... is waiting to start: <reason>``. ``container`` may be left out only when the pod has
one container (else the API server's 400 ``a container name must be specified for pod p,
choose one of: [a b]``); an unknown pod is a 404 ``Status``. ``timestamps=true`` prefixes each
line with an RFC 3339 timestamp of nine fractional digits and a space (the kubelet's
``RFC3339NanoFixed``); ``tailLines`` keeps the last lines, then ``sinceTime`` (RFC 3339, whole
seconds) drops lines written before it; ``limitBytes`` ends the output after that many bytes,
even mid-line. The body is chunked text; with ``follow=true`` it stays open while the instance
runs and streams each new line; it ends when the instance stops.

Logs are kept per container instance (its ``containerID``). Tests write lines with
``write_log``, crash a container with ``crash`` (its instance becomes ``lastState``, the pod
crash-loops) and start it again with ``start_again``.
"""

from __future__ import annotations

import copy
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from tests.fakes.kube import KubeState, container_status, now

CHUNK = 64 * 1024


def new_id() -> str:
    return f"containerd://{uuid.uuid4().hex}"


def started(name: str = "app", restarts: int = 0) -> dict[str, Any]:
    """A running container's status, with the ``containerID`` of its instance."""
    cs = container_status(name, restarts=restarts)
    cs["containerID"] = new_id()
    return cs


def stamp(ns: int) -> str:
    """The kubelet's ``timestamps=true`` prefix (``2006-01-02T15:04:05.000000000Z07:00``)."""
    whole = datetime.fromtimestamp(ns // 1_000_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{ns % 1_000_000_000:09d}Z"


def _store(st: KubeState) -> dict[str, list[tuple[int, bytes]]]:
    """Lines per container instance: ``containerID -> [(timestamp ns, line)]``."""
    store: dict[str, list[tuple[int, bytes]]] = st.__dict__.setdefault("container_logs", {})
    return store


def _status(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container:
            return dict(cs)
    return None


def _running_id(pod: dict[str, Any] | None, container: str) -> str | None:
    cs = _status(pod or {}, container)
    if cs is None or "running" not in (cs.get("state") or {}):
        return None
    return str(cs.get("containerID") or "") or None


def write_log(
    st: KubeState, ns: str, pod: str, container: str, *lines: str | bytes, at: int | None = None
) -> list[int]:
    """Append lines to the running instance of ``container``; return their timestamps
    (``at``: all of them at that nanosecond)."""
    with st.cond:
        cid = _running_id(st.pods.get((ns, pod)), container)
        assert cid, f"container {container} of {ns}/{pod} is not running (or has no containerID)"
        out = _store(st).setdefault(cid, [])
        stamps = []
        for line in lines:
            ts = at if at is not None else max(time.time_ns(), out[-1][0] + 1 if out else 0)
            out.append((ts, line.encode() if isinstance(line, str) else line))
            stamps.append(ts)
        st.cond.notify_all()
        return stamps


def crash(
    st: KubeState, ns: str, pod: str, container: str, reason: str = "Error", exit_code: int = 1
) -> dict[str, Any]:
    """The running instance dies and the kubelet backs off: CrashLoopBackOff, one more restart."""
    with st.cond:
        obj = copy.deepcopy(st.pods[(ns, pod)])
        for cs in obj["status"]["containerStatuses"]:
            if cs["name"] != container:
                continue
            cs["lastState"] = {
                "terminated": {
                    "reason": reason,
                    "exitCode": exit_code,
                    "startedAt": now(),
                    "finishedAt": now(),
                    "containerID": cs.get("containerID") or new_id(),
                }
            }
            cs["state"] = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off 10s restarting failed container={container} pod={pod}",
                }
            }
            cs.update(ready=False, started=False, restartCount=cs["restartCount"] + 1)
            cs.pop("containerID", None)
        obj["status"]["conditions"][0].update(status="False", lastTransitionTime=now())
        return st.put_pod(obj)


def start_again(st: KubeState, ns: str, pod: str, container: str) -> dict[str, Any]:
    """The kubelet starts a new instance of the container (a new ``containerID``)."""
    with st.cond:
        obj = copy.deepcopy(st.pods[(ns, pod)])
        for cs in obj["status"]["containerStatuses"]:
            if cs["name"] == container:
                cs.update(state={"running": {"startedAt": now()}}, containerID=new_id())
                cs.update(ready=True, started=True)
        obj["status"]["conditions"][0].update(status="True", lastTransitionTime=now())
        return st.put_pod(obj)


def _bad(h: Any, message: str) -> None:
    from tests.fakes.kube_routes import status

    h.reply(400, status(400, "BadRequest", message))


def _instance(pod: dict[str, Any], name: str, container: str, previous: bool) -> str:
    """The container instance whose log is asked for (the kubelet's rules), or raise
    ``ValueError`` with the kubelet's message."""
    cs = _status(pod, container)
    if cs is None:
        raise ValueError(f'container "{container}" in pod "{name}" is not available')
    state = cs.get("state") or {}
    last = (cs.get("lastState") or {}).get("terminated") or {}
    if previous:
        if not last.get("containerID"):
            raise ValueError(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        return str(last["containerID"])
    if "running" in state or "terminated" in state:
        return str(cs.get("containerID") or last.get("containerID") or "")
    if last.get("containerID"):
        return str(last["containerID"])
    reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
    raise ValueError(f'container "{container}" in pod "{name}" is waiting to start: {reason}')


def _since(query: dict[str, str]) -> int | None:
    if raw := query.get("sinceTime"):
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))  # ValueError: a bad time
        return int(parsed.timestamp()) * 1_000_000_000  # metav1.Time: whole seconds
    if raw := query.get("sinceSeconds"):
        return time.time_ns() - int(raw) * 1_000_000_000
    return None


def log_route(server: Any, h: Any, ns: str, name: str, query: dict[str, str]) -> None:
    from tests.fakes.kube_routes import status

    st = server.state
    with st.cond:
        pod = copy.deepcopy(st.pods.get((ns, name)))
    if pod is None:
        return h.reply(404, status(404, "NotFound", f'pods "{name}" not found'))
    names = [c["name"] for c in pod["spec"]["containers"]]
    container = query.get("container") or (names[0] if len(names) == 1 else "")
    if not container:
        return _bad(
            h,
            f"a container name must be specified for pod {name}, "
            f"choose one of: [{' '.join(names)}]",
        )
    if container not in names:
        return _bad(h, f"container {container} is not valid for pod {name}")
    try:
        cid = _instance(pod, name, container, query.get("previous") == "true")
        since = _since(query)
    except ValueError as exc:
        return _bad(h, str(exc))
    tail = int(query["tailLines"]) if "tailLines" in query else None
    left = int(query["limitBytes"]) if "limitBytes" in query else None
    timestamps, follow = query.get("timestamps") == "true", query.get("follow") == "true"
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    with st.cond:
        lines = list(_store(st).get(cid, []))
    sent = len(lines)
    if tail is not None:
        lines = lines[-tail:] if tail else []
    while True:
        for ts, line in lines:
            if since is not None and ts < since:
                continue
            data = (f"{stamp(ts)} ".encode() if timestamps else b"") + line + b"\n"
            if left is not None:
                data, left = data[:left], left - len(data[:left])
            for at in range(0, len(data), CHUNK):
                piece = data[at : at + CHUNK]
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            h.wfile.flush()
            if left == 0:
                return h.stream_end()
        if not follow:
            return h.stream_end()
        with st.cond:
            while not st.stopping and _running_id(st.pods.get((ns, name)), container) == cid:
                if len(_store(st).get(cid, [])) > sent:
                    break
                st.cond.wait(0.1)
            lines = list(_store(st).get(cid, [])[sent:])
            sent += len(lines)
            if not lines:  # the instance stopped (or the server is stopping): the stream ends
                return h.stream_end()
