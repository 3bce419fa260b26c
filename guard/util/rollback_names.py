"""The name ``docker.rollback`` gives the container it puts aside while the new one starts.

The docker monitors read it too: the aside container's ``die`` is Guard's own doing, and its
name still holds the watched name, so a name selector would take it for a fault of the service
(tests/monitors/test_docker_name_selector.py).
"""

from __future__ import annotations

import re
import time

_ASIDE = re.compile(r"-guard-rollback-\d+\Z")


def rollback_aside(name: str, at: float | None = None) -> str:
    """The old container's name while its replacement is created and started."""
    return f"{name}-guard-rollback-{int(time.time() if at is None else at)}"


def is_rollback_aside(name: str) -> bool:
    """Whether ``name`` is one ``rollback_aside`` gave."""
    return _ASIDE.search(name) is not None
