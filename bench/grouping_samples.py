"""Labelled samples of four log shapes the public corpus lacks: nginx, PostgreSQL, Kubernetes
events and Python tracebacks.

Each event is a real message shape of that system (taken from its documentation and source),
filled with varied values by a seeded generator, so a run is repeatable. The label is the event
name: lines that are one fault to an SRE share it (an upstream refusing connections is one event
whatever the request; a readiness and a liveness probe failing are two).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

Line = tuple[str, str]  # (raw line, event label)
R = random.Random


def _ip(r: R) -> str:
    return f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


def _word(r: R) -> str:
    return r.choice(
        [
            "users",
            "orders",
            "carts",
            "payments",
            "search",
            "sessions",
            "items",
            "invoices",
            "accounts",
            "reports",
        ]
    )


def _path(r: R) -> str:
    return f"/v{r.randint(1, 3)}/{_word(r)}/{r.randint(1, 99999)}"


def _pod(r: R, app: str) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return (
        f"{app}-{''.join(r.choice(alphabet) for _ in range(10))}-"
        f"{''.join(r.choice(alphabet) for _ in range(5))}"
    )


def _app(r: R) -> str:
    return r.choice(["api", "worker", "web", "billing", "auth", "search-indexer"])


# -- nginx error log -----------------------------------------------------------------------------


def _nginx(r: R) -> Line:
    ts = f"2026/12/03 {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"
    pid = r.randint(20, 60)
    conn = r.randint(1, 900000)
    client, host = _ip(r), r.choice(["api.example.com", "shop.example.com", "example.com"])
    method = r.choice(["GET", "POST", "PUT", "DELETE"])
    path = _path(r)
    upstream = f"http://{_ip(r)}:{r.choice([8080, 8000, 3000])}{path}"
    req = f'client: {client}, server: {host}, request: "{method} {path} HTTP/1.1"'
    events: list[tuple[str, str]] = [
        (
            "upstream_refused",
            f"[error] {pid}#{pid}: *{conn} connect() failed (111: Connection "
            f'refused) while connecting to upstream, {req}, upstream: "{upstream}", host: '
            f'"{host}"',
        ),
        (
            "upstream_timeout",
            f"[error] {pid}#{pid}: *{conn} upstream timed out (110: Connection "
            f"timed out) while reading response header from upstream, {req}, upstream: "
            f'"{upstream}", host: "{host}"',
        ),
        (
            "buffered_to_file",
            f"[warn] {pid}#{pid}: *{conn} an upstream response is buffered to a "
            f"temporary file /var/cache/nginx/proxy_temp/{r.randint(0, 9)}/{r.randint(10, 99)}/"
            f'{r.randint(0, 10**9):010d} while reading upstream, {req}, upstream: "{upstream}", '
            f'host: "{host}"',
        ),
        (
            "file_not_found",
            f'[error] {pid}#{pid}: *{conn} open() "/usr/share/nginx/html/'
            f'{r.choice(["favicon.ico", "robots.txt", "apple-touch-icon.png", ".env"])}" failed '
            f"(2: No such file or directory), client: {client}, server: {host}, request: "
            f'"GET /x HTTP/1.1", host: "{host}"',
        ),
        (
            "limiting_requests",
            f"[error] {pid}#{pid}: *{conn} limiting requests, excess: "
            f'{r.randint(1, 40)}.{r.randint(0, 999):03d} by zone "{r.choice(["api", "login"])}", '
            f'{req}, host: "{host}"',
        ),
        (
            "worker_exited",
            f"[alert] 1#1: worker process {r.randint(20, 9000)} exited on signal "
            f"{r.choice([9, 11])}",
        ),
        (
            "ssl_handshake",
            f"[crit] {pid}#{pid}: *{conn} SSL_do_handshake() failed (SSL: error:"
            f"0A00006C:SSL routines::bad key share) while SSL handshaking, client: {client}, "
            f"server: 0.0.0.0:443",
        ),
        (
            "no_live_upstreams",
            f"[error] {pid}#{pid}: *{conn} no live upstreams while connecting "
            f'to upstream, {req}, upstream: "http://backend{path}", host: "{host}"',
        ),
    ]
    label, text = r.choice(events)
    return f"{ts} {text}", label


# -- PostgreSQL ----------------------------------------------------------------------------------


def _postgres(r: R) -> Line:
    ts = (
        f"2026-12-03 {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}."
        f"{r.randint(0, 999):03d} UTC"
    )
    who = r.choice(["", f" {r.choice(['app', 'report', 'admin'])}@{r.choice(['orders', 'shop'])}"])
    user = r.choice(["app", "report", "admin", "backup", "grafana"])
    table = r.choice(["users", "orders", "order_items", "payments", "sessions"])
    events = [
        ("too_many_clients", "FATAL:  sorry, too many clients already"),
        ("auth_failed", f'FATAL:  password authentication failed for user "{user}"'),
        (
            "duplicate_key",
            f"ERROR:  duplicate key value violates unique constraint "
            f'"{table}_{r.choice(["email", "pkey", "external_id"])}_key"',
        ),
        ("deadlock", "ERROR:  deadlock detected"),
        ("statement_timeout", "ERROR:  canceling statement due to statement timeout"),
        ("client_reset", "LOG:  could not receive data from client: Connection reset by peer"),
        (
            "relation_missing",
            f'ERROR:  relation "{table}_{r.randint(2020, 2026)}" does not '
            f"exist at character {r.randint(10, 90)}",
        ),
        (
            "checkpoint_complete",
            f"LOG:  checkpoint complete: wrote {r.randint(1, 9000)} buffers "
            f"({r.randint(0, 99)}.{r.randint(0, 9)}%); 0 WAL file(s) added, {r.randint(0, 3)} "
            f"removed, {r.randint(0, 9)} recycled; write={r.randint(0, 300)}.{r.randint(0, 999):03d}"
            f" s, sync=0.{r.randint(0, 999):03d} s, total={r.randint(0, 300)}.{r.randint(0, 999):03d}"
            f" s",
        ),
        ("admin_terminate", "FATAL:  terminating connection due to administrator command"),
        (
            "disk_full",
            f'PANIC:  could not write to file "pg_wal/xlogtemp.{r.randint(10, 99999)}'
            f'": No space left on device',
        ),
    ]
    label, text = r.choice(events)
    return f"{ts} [{r.randint(30, 99999)}]{who} {text}", label


# -- Kubernetes events (kubectl get events -n NAMESPACE -o wide, one namespace) ------------------


def _kube(r: R) -> Line:
    app = _app(r)
    pod = _pod(r, app)
    ns = "prod"
    ip = _ip(r)
    nodes = r.randint(3, 12)
    image = f"registry.example.com/{app}:v1.{r.randint(0, 40)}.{r.randint(0, 9)}"
    events = [
        (
            "backoff",
            "Warning",
            "BackOff",
            f"Back-off restarting failed container {app} in pod "
            f"{pod}_{ns}({r.randbytes(4).hex()}-{r.randbytes(2).hex()})",
        ),
        (
            "readiness",
            "Warning",
            "Unhealthy",
            f'Readiness probe failed: Get "http://{ip}:8080/'
            f'healthz": dial tcp {ip}:8080: connect: connection refused',
        ),
        (
            "liveness",
            "Warning",
            "Unhealthy",
            f"Liveness probe failed: HTTP probe failed with "
            f"statuscode: {r.choice([500, 502, 503])}",
        ),
        (
            "scheduling",
            "Warning",
            "FailedScheduling",
            f"0/{nodes} nodes are available: "
            f"{r.randint(1, nodes)} Insufficient {r.choice(['cpu', 'memory'])}. preemption: 0/"
            f"{nodes} nodes are available: {nodes} No preemption victims found for incoming pod.",
        ),
        (
            "mount",
            "Warning",
            "FailedMount",
            f'MountVolume.SetUp failed for volume "config" : configmap "{app}-config" not found',
        ),
        (
            "pull_failed",
            "Warning",
            "Failed",
            f'Failed to pull image "{image}": rpc error: code '
            f'= NotFound desc = failed to pull and unpack image "{image}": not found',
        ),
        (
            "oom",
            "Warning",
            "OOMKilling",
            f"Memory cgroup out of memory: Killed process "
            f"{r.randint(100, 99999)} ({r.choice(['java', 'python', 'node'])}) total-vm:"
            f"{r.randint(10**5, 10**7)}kB, anon-rss:{r.randint(10**5, 10**6)}kB, file-rss:"
            f"{r.randint(0, 9999)}kB",
        ),
        (
            "evicted",
            "Warning",
            "Evicted",
            f"The node was low on resource: memory. Threshold "
            f"quantity: 100Mi, available: {r.randint(1, 99)}Mi.",
        ),
        ("killing", "Normal", "Killing", f"Stopping container {app}"),
        ("pulled", "Normal", "Pulled", f'Container image "{image}" already present on machine'),
    ]
    label, type_, reason, message = r.choice(events)
    age = r.choice(
        [f"{r.randint(1, 59)}s", f"{r.randint(1, 59)}m", f"{r.randint(1, 9)}m{r.randint(1, 59)}s"]
    )
    return f"{age} {type_} {reason} pod/{pod} {message}", label


# -- Python tracebacks, as a logging handler writes them line by line ----------------------------

_FRAMES = [
    ("api/handlers.py", "get_user", "return db.fetch_one(query, user_id)"),
    ("api/db.py", "fetch_one", "rows = self.pool.execute(sql, *args)"),
    ("worker/jobs.py", "run", "result = task.handler(payload)"),
    ("api/auth.py", "check_token", "claims = jwt.decode(token, key, algorithms=ALGS)"),
]


def _python(r: R) -> Iterator[Line]:
    ts = (
        f"2026-12-03 {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d},"
        f"{r.randint(0, 999):03d}"
    )
    logger = r.choice(["api.handlers", "worker.jobs", "api.auth"])
    yield (
        f"{ts} ERROR {logger} - Unhandled exception in {r.choice(['GET', 'POST'])} {_path(r)}",
        "unhandled",
    )
    yield "Traceback (most recent call last):", "traceback_head"
    for file, func, source in r.sample(_FRAMES, r.randint(1, 3)):
        yield f'  File "/app/{file}", line {r.randint(10, 400)}, in {func}', "frame"
        yield f"    {source}", f"source:{source}"
    yield r.choice(
        [
            (f"KeyError: '{r.choice(['user_id', 'email', 'tenant', 'order'])}'", "key_error"),
            (
                f"psycopg.OperationalError: connection failed: connection to server at "
                f'"{_ip(r)}", port 5432 failed: Connection refused',
                "db_refused",
            ),
            (f"TimeoutError: timed out after {r.randint(1, 60)}.0s", "timeout"),
            ("jwt.exceptions.ExpiredSignatureError: Signature has expired", "jwt_expired"),
        ]
    )


def _repeat(make: Callable[[R], Line], count: int, seed: int) -> list[Line]:
    r = R(seed)
    return [make(r) for _ in range(count)]


def samples() -> dict[str, list[Line]]:
    """System name -> labelled lines, 1,000 each (the tracebacks: about that many)."""
    r = R(7)
    tracebacks: list[Line] = []
    while len(tracebacks) < 1000:
        tracebacks.extend(_python(r))
    return {
        "nginx": _repeat(_nginx, 1000, 1),
        "PostgreSQL": _repeat(_postgres, 1000, 2),
        "Kubernetes": _repeat(_kube, 1000, 3),
        "Python": tracebacks,
    }
