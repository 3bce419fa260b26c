"""What a ``guard run`` loads is what its configuration uses (issue 48: memory at scale).

A real ``guard run`` subprocess with HTTP and log-file monitors and the ``local`` sandbox:
once it is ready and its monitors have checked, none of the libraries only other
configurations need is in its ``sys.modules`` (the Docker SDK and requests with no Docker
monitor or sandbox, httpx before an Alertmanager verification, Jinja2 before a report or a
console page, a websocket library for a server that serves none, and the SDKs of channels,
clusters and memory that are not configured). Each costs resident memory in every appliance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.helpers.agent import free_port
from tests.helpers.nowhere import no_engine_no_cluster

NOT_USED = [
    "docker",
    "requests",
    "httpx",
    "jinja2",
    "wsproto",
    "websockets",
    "kubernetes",
    "lancedb",
    "pyarrow",
    "telegram",
    "slack_sdk",
    "nio",
    "mcp",
    "paramiko",
]

# Runs ``guard run`` in this process; a thread waits for /readyz and for both monitors to have
# checked five times (counted in the metrics; every 1 s: the periodic jobs, such as the look for
# skills to promote every 2 s, have run too), prints the packages loaded by then, and stops Guard.
RUN_AND_LOOK = textwrap.dedent(
    """
    import json, os, runpy, signal, sys, threading, time, urllib.request

    def look(url, names):
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=5) as r:
                    metrics = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
                    counts = {
                        ln.split('"')[1]: float(ln.split()[-1])
                        for ln in metrics.splitlines()
                        if ln.startswith("guard_check_lag_seconds_count{")
                    }
                    if r.status == 200 and min(counts.get(t, 0) for t in ("http", "logfile")) >= 5:
                        break
            except OSError:
                pass
            time.sleep(0.3)
        print(json.dumps(sorted(n for n in names if n in sys.modules)), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=look, args=(sys.argv[1], json.loads(sys.argv[2])), daemon=True).start()
    sys.argv = ["guard", "run"]
    runpy.run_module("guard.cli", run_name="__main__")
    """
)


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_run_of_http_and_log_monitors_loads_nothing_it_does_not_use(
    home: GuardHome, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_engine_no_cluster(monkeypatch, home.root)  # the built-in skills' Docker steps: no engine
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    Thread(target=server.serve_forever, daemon=True).start()
    log = tmp_path / "app.log"
    log.write_text("INFO started\n")
    home.playbook(
        "lean",
        [
            {
                "id": "web",
                "type": "http",
                "url": f"http://127.0.0.1:{server.server_port}/",
                "every": "1s",
            },
            {
                "id": "app",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "app_error", "pattern": r"\bERROR\b"}],
            },
        ],
    )
    home.write_config({"sandbox": {"backend": "local"}})
    port = free_port()
    env = {
        **os.environ,
        "GUARD_CONFIG": str(home.config),
        "GUARD_HTTP_HOST": "127.0.0.1",
        "GUARD_HTTP_PORT": str(port),
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUN_AND_LOOK, f"http://127.0.0.1:{port}", json.dumps(NOT_USED)],
            cwd=home.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=150,
        )
    finally:
        server.shutdown()
    assert proc.stdout.strip(), proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [], proc.stderr[-3000:]
