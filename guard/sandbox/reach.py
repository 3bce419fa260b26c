"""Whether a sandbox can run here, asked before it is needed (``guard doctor``, ``/readyz``,
check-config, the question shown to a human, a human's shell fix).

A backend with an engine (``SandboxBackend.connect``) can run only if its engine answers; one
without (``local``: child processes) always can. The answer is kept ``TTL`` seconds, so asking
for every question or every fix costs at most one ``/_ping`` a minute, and an engine that comes
back is noticed within that. Where nothing can run, ``Reach.why`` says what is missing here, in
the words a human deploying Guard uses: no Docker engine, no cluster (tested in
tests/app/test_capabilities.py and tests/cli/test_doctor.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from guard.config import KubernetesSettings, SandboxSettings
from guard.sandbox.kinds import AUTO, SANDBOX_BACKENDS, sandbox_backend

TTL = 60.0  # seconds an answer is kept
WAIT = 12.0  # seconds an answer may take (a ping that fails fast takes milliseconds)

SHELL_CANNOT_RUN = "shell steps cannot run here"


@dataclass(frozen=True)
class Reach:
    """The configured backend's state here: ``ok``, and if not, ``why`` and the engine's
    own error (``error``: it names DOCKER_HOST and the fix)."""

    backend: str
    ok: bool
    isolates: bool | None  # None: the table does not say
    why: str = ""  # "no Docker engine, no cluster"
    error: str = ""

    @property
    def sentence(self) -> str:
        """``none (no Docker engine, no cluster): shell steps cannot run here``, or the
        backend that runs them."""
        if not self.ok:
            return f"none ({self.why}): {SHELL_CANNOT_RUN}"
        return f"{self.what}: shell steps run here"

    @property
    def what(self) -> str:
        """``docker, isolating, reachable``: which backend, and what is known of it."""
        isolation = {True: ", isolating", False: ", not isolating", None: ""}[self.isolates]
        return f"{self.backend}{isolation}, {'reachable' if self.ok else 'unreachable'}"


def cluster_configured(settings: KubernetesSettings | None = None) -> bool:
    """Whether Guard has cluster credentials here (in-cluster, or a kubeconfig file): read
    from the environment and the disk only, never by calling the cluster."""
    k8s = settings or KubernetesSettings()
    if k8s.in_cluster or (k8s.in_cluster is None and os.environ.get("KUBERNETES_SERVICE_HOST")):
        return True
    path = k8s.kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(path or "~/.kube/config").expanduser().is_file()


def engine_error() -> str:
    """ "" when the Docker engine ``DOCKER_HOST`` names answers, else its error. A local socket
    is pinged without the Docker SDK, which a configuration without Docker never loads."""
    from guard.util.docker_engine import Timeouts, ping

    answer = ping(Timeouts.monitor)
    if answer is not None:
        return answer
    from guard.util.docker_client import EngineUnreachable, docker_client

    try:
        client = docker_client(Timeouts.monitor)
    except EngineUnreachable as exc:
        return str(exc)
    with contextlib.suppress(Exception):
        client.close()
    return ""


def _assess(settings: SandboxSettings, k8s: KubernetesSettings | None) -> Reach:
    """The backend ``sandbox.backend`` names (``auto``: the first isolating one that works),
    judged by its own probe in the table."""
    cluster = k8s or KubernetesSettings()
    if settings.backend == AUTO:
        reasons = []
        for entry in SANDBOX_BACKENDS.values():
            if entry.isolates and entry.probe is not None:
                why = entry.probe(settings, cluster)
                if why is None:
                    return Reach(entry.name, True, entry.isolates)
                reasons.append(why)
        return Reach(AUTO, False, None, ", ".join(reasons), engine_error())
    backend = sandbox_backend(settings.backend)
    why = backend.probe(settings, cluster) if backend.probe is not None else None
    if why is None:
        return Reach(backend.name, True, backend.isolates)
    missing = [why]
    if backend.name == "docker" and not cluster_configured(k8s):
        missing.append("no cluster")
    return Reach(backend.name, False, backend.isolates, ", ".join(missing), engine_error())


def _bounded(settings: SandboxSettings, k8s: KubernetesSettings | None) -> Reach:
    """``_assess``, given ``WAIT`` seconds: an engine that accepts and never answers (a
    firewall, a hung proxy) would hold the caller for the client's whole timeout (minutes).
    A daemon thread: a silent engine's look never holds up the process's exit."""
    found: list[Reach] = []
    done = threading.Event()

    def look() -> None:
        try:
            found.append(_assess(settings, k8s))
        except Exception as exc:  # a backend the table does not know: said, not raised
            found.append(Reach(settings.backend, False, None, str(exc), str(exc)))
        finally:
            done.set()

    threading.Thread(target=look, name="sandbox-reach", daemon=True).start()
    if done.wait(WAIT) and found:
        return found[0]
    why = f"the {settings.backend} backend's engine did not answer within {WAIT:g} s"
    return Reach(settings.backend, False, None, why, why)


_lock = threading.Lock()
_known: dict[tuple[str, ...], tuple[float, Reach]] = {}


def reach(
    settings: SandboxSettings, k8s: KubernetesSettings | None = None, *, fresh: bool = False
) -> Reach:
    """Whether the configured backend can run a step here (kept ``TTL`` seconds; ``fresh``:
    ask again now). Blocking: call it from a worker thread on an event loop."""
    where = ("DOCKER_HOST", "KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    key = (settings.backend, *(os.environ.get(name, "") for name in where))
    with _lock:
        known = _known.get(key)
    if known is not None and not fresh and time.monotonic() - known[0] < TTL:
        return known[1]
    found = _bounded(settings, k8s)
    with _lock:
        _known[key] = (time.monotonic(), found)
    return found
