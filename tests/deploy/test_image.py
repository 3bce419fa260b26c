"""The appliance image (deploy/Dockerfile, built offline): health, metrics, non-root, durable /data.

Slow the first time on a machine (debootstrap, wheels, image: minutes); after a change to guard/
only Guard's own layer is built (the wheels and the dependency stage are cached), and with
nothing changed the image is found by its content-hash tag; the test then takes ~30 s.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.images import build_lock

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_offline", REPO / "deploy" / "build_offline.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def appliance_image(docker_client: Any, pytestconfig: pytest.Config) -> str:
    with build_lock("appliance"):  # its own debootstrap: the spec images need not wait
        return _appliance_image(pytestconfig)


def _appliance_image(pytestconfig: pytest.Config) -> str:
    builder = _builder()
    tag: str = builder.image_tag()
    if builder.image_exists(tag):
        return tag
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        message = "building the image offline needs root and debootstrap"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(REPO / "deploy" / "build_offline.py"), "--prune"],  # disk: 1.5 GB each
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    if report is not None:
        report.write_line(
            f"built {tag} in {time.monotonic() - started:.0f}s: {proc.stdout.strip()}"
        )
    return tag


def _playbook_tar() -> bytes:
    """A playbook whose check always fails, so the appliance has an incident to keep."""
    body = yaml.safe_dump(
        {
            "name": "probe",
            "monitors": [
                {"id": "down", "type": "http", "url": "http://127.0.0.1:1/", "every": "1s"}
            ],
        }
    ).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("probe.yaml")
        info.size, info.mode = len(body), 0o644
        tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


@pytest.fixture
def volume(docker_client: Any) -> Iterator[str]:
    name = f"guard-test-data-{os.getpid()}"
    docker_client.volumes.create(name)
    yield name
    for c in docker_client.containers.list(all=True, ignore_removed=True, filters={"volume": name}):
        c.remove(force=True)
    with contextlib.suppress(Exception):
        docker_client.volumes.get(name).remove(force=True)


def _start(docker_client: Any, image: str, volume: str, name: str) -> tuple[Any, str]:
    test = docker_client.images.get(image).attrs["Config"]["Healthcheck"]["Test"]
    container = docker_client.containers.create(
        image,
        name=name,
        volumes={volume: {"bind": "/data", "mode": "rw"}},
        ports={"8080/tcp": ("127.0.0.1", None)},
        labels={"guard.test": "1"},
        healthcheck={
            "test": test,
            "interval": 1_000_000_000,
            "timeout": 5_000_000_000,
            "retries": 3,
            "start_period": 0,
        },
    )  # the image's check, run every second
    container.put_archive("/etc/guard/playbooks", _playbook_tar())
    container.start()
    container.reload()
    port = container.attrs["NetworkSettings"]["Ports"]["8080/tcp"][0]["HostPort"]
    return container, f"http://127.0.0.1:{port}"


def _wait(predicate: Any, what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(httpx.TransportError):
            if predicate():
                return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _guard(container: Any, *args: str) -> tuple[int, str]:
    code, out = container.exec_run(["guard", *args], demux=False)
    return code, out.decode()


@pytest.mark.timeout(1900)
def test_image_serves_health_runs_unprivileged_and_keeps_state_in_data(
    docker_client: Any, appliance_image: str, volume: str, pytestconfig: pytest.Config
) -> None:
    first, url = _start(docker_client, appliance_image, volume, f"{volume}-1")
    _wait(lambda: httpx.get(url + "/healthz", timeout=5).status_code == 200, "/healthz 200")
    unresolved = re.compile(
        r'guard_incidents\{state="(open|diagnosing|awaiting_human|escalated)"\}'
        r" 1\.0"
    )  # the agent may already have asked a human about it
    _wait(
        lambda: unresolved.search(httpx.get(url + "/metrics").text) is not None,
        "the failing check's incident in /metrics",
    )

    def healthy() -> bool:
        first.reload()
        return bool(first.attrs["State"]["Health"]["Status"] == "healthy")

    _wait(healthy, "docker to run the image's HEALTHCHECK and call it healthy")

    image = docker_client.images.get(appliance_image)
    size_mb = image.attrs["Size"] / 1e6
    report = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    if report is not None:
        report.write_line(f"appliance image {appliance_image}: {size_mb:.1f} MB")
    # 600 MB, journalctl for journald monitors (Debian's systemd: 15 MB) and the MCP SDK with
    # what it needs (cryptography, jsonschema, httpx2: 26 MB); then the Slack, Matrix and SSH
    # engine clients (slack_sdk 5 MB, matrix-nio with pycryptodome 15 MB, paramiko with pynacl
    # and bcrypt 8 MB: docs/DEPLOY.md)
    assert size_mb <= 660, f"the image is {size_mb:.1f} MB (goal: 660 MB; see deploy/slim.sh)"
    # What deploy/slim.sh leaves must still load: memory, Kubernetes, the log matchers, Postgres.
    code, out = first.exec_run(
        [
            "python3",
            "-c",
            (
                "import lancedb, pyarrow, pyarrow.dataset, pyarrow.fs, pyarrow.compute, numpy;"
                "import re2, hyperscan, psycopg;"
                "import kubernetes.client, kubernetes.config, kubernetes.watch;"
                "import guard.memory.semantic, guard.k8s.client, guard.monitors.matcher;"
                "import guard.mcp.server, guard.mcp.http"
            ),
        ]
    )
    assert code == 0, out.decode()[-2000:]
    assert image.attrs["Config"]["User"] == "guard"
    code, out = first.exec_run(["journalctl", "--version"])  # journald monitors read with it
    assert code == 0 and out.startswith(b"systemd "), out
    code, uid = first.exec_run(["id", "-u"])
    assert code == 0 and uid.decode().strip() != "0"
    env = dict(e.split("=", 1) for e in first.attrs["Config"]["Env"])
    assert env["GUARD_DATA_DIR"] == "/data" and env["GUARD_LOG_FORMAT"] == "json"
    logs = first.logs().decode().splitlines()
    assert any('"serving /healthz' in line for line in logs)
    not_json = [line for line in logs if line.strip() and not line.startswith("{")]
    assert not_json == [], "\n".join(not_json[:20])

    code, out = _guard(first, "incidents", "list", "--json")
    assert code == 0, out
    (before,) = json.loads(out)
    first.stop(timeout=20)  # SIGTERM: a clean shutdown
    first.remove()

    second, url = _start(docker_client, appliance_image, volume, f"{volume}-2")
    _wait(lambda: httpx.get(url + "/readyz", timeout=5).status_code == 200, "/readyz 200")
    code, out = _guard(second, "incidents", "list", "--json")
    assert code == 0, out
    (after,) = json.loads(out)  # the same incident, not a new one
    assert (after["id"], after["fingerprint"], after["opened_at"]) == (
        before["id"],
        before["fingerprint"],
        before["opened_at"],
    )
    code, out = _guard(second, "audit", "verify")
    assert code == 0, out
    starts = second.exec_run(
        [
            "python3",
            "-c",
            (
                "import sqlite3; c = sqlite3.connect('/data/guard.db'); print(c.execute("
                "\"select count(*) from audit_log where action='guard.started'\").fetchone()[0])"
            ),
        ]
    )
    assert int(starts.output.decode()) == 2  # one chain across both containers
