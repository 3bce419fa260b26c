"""sshd's auth log (through rsyslog) and MariaDB's error log, real daemons in an image built
offline from Debian's packages (``guard.sandbox.images.build_offline``), driven through their
faults (``bench/daemon_auth_driver.py``) and labelled by construction for ``bench.grouping``'s
daemons group: a line's event is the message of the daemon's source it is, from the complete
lists below (a line matching none fails the capture), since one injection (an accepted login, a
restart) logs several messages and two injections share some (``Connection closed by ...``).
"""

from __future__ import annotations

import re
from typing import Any

from bench.daemon_stack import Line, labelled, run_driver

SPEC: dict[str, Any] = {
    "suite": "bookworm",
    "mirror": "http://deb.debian.org/debian",
    "base_image": "debian:bookworm-slim",
    "user": "0:0",
    "packages": [
        *("mariadb-server", "mariadb-client", "openssh-server", "openssh-client"),
        *("rsyslog", "procps", "python3"),
    ],
    "tools": ["mariadbd", "mariadb", "sshd", "ssh", "rsyslogd", "python3"],
}
SSHD = [  # the first that a line holds names its event
    *("Server listening", "Invalid user", "Connection closed by invalid user"),
    *("Connection closed by authenticating user", r"Connection closed by [\d.]+ port"),
    *("Failed password for invalid user", "Failed password for", "Accepted publickey"),
    *("session opened", "session closed", "Received disconnect", "Disconnected from user"),
    *("Unable to open env file", "deprecated reading of user environment"),
    *("authentication failure", "check pass; user unknown"),
    *("kex_exchange_identification: Connection closed", "kex_exchange_identification: client"),
    *("send_error", "banner exchange"),
]
MARIADB = [
    *(r"Access denied .*\(using password", "Access denied"),  # two messages of the source
    *("error writing communication packets", "timeout reading communication"),
    *("--log-bin", "ready for connections", "Starting MariaDB", "Server socket created"),
    *("Plugin 'FEEDBACK'", "Shutdown completed;", "log sequence number", "buffer_pool_size_max"),
    *("io_uring", "Using AVX", "Setting file", "transaction pools", "rollback segments"),
    *("Loading buffer pool", "size is now", "End of log at", "Compressed tables"),
    *("Completed initialization", "Buffered log writes", "load completed", "^Version: "),
    *("Shutdown complete", "Normal shutdown", "Starting shutdown", "Removed temporary tablespace"),
    *("FTS optimize thread", "Dumping buffer pool", "dump completed", "MAC address"),
    "max_open_files",
]
EVENTS = {"sshd (auth.log)": SSHD, "MariaDB": MARIADB}


def image() -> str:
    """The image, built once (debootstrap, a few minutes) and then cached."""
    import docker

    from guard.sandbox import images
    from tests.helpers.images import ensure_spec_image

    return ensure_spec_image(
        docker.from_env(), f"guard-bench-daemons:{images.spec_hash(SPEC)}", SPEC
    )


def label(system: str, fault: str, line: str) -> str:
    event = next((e for e in EVENTS[system] if re.search(e, line)), None)
    if event is None:
        raise ValueError(f"a {system} line no event names: {line}")
    return event


def capture(seed: int = 48) -> dict[str, list[Line]]:
    """sshd's and MariaDB's labelled lines."""
    return labelled(run_driver(image(), "bench.daemon_auth_driver", seed), label)
