"""Guard: a self-healing DevOps guard agent appliance.

``__version__`` is looked up on first use: ``importlib.metadata`` costs ~30 ms, and every
``guard`` command imports this package before it does anything.

docker-py imports its ssh:// transport, and with it paramiko (about 17 MB resident), whenever
paramiko is installed, though only an engine at ``DOCKER_HOST=ssh://...`` uses it; so unless
one is configured the transport is kept out until ``guard.util.docker_client`` needs it
(``ssh_transport``). Every module of Guard imports this package before it imports docker.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if not os.environ.get("DOCKER_HOST", "").startswith("ssh://"):
    sys.modules.setdefault("docker.transport.sshconn", None)  # type: ignore[arg-type]

if TYPE_CHECKING:
    __version__: str

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("guard")
    except PackageNotFoundError:  # running from a source tree without installation
        found = "0.0.0+source"
    globals()["__version__"] = found
    return found
