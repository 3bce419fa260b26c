"""The tiny offline-built test image (static busybox), shared by the tests and the benchmarks."""

from __future__ import annotations

from typing import Any

BUSYBOX_IMAGE = "guard-test-busybox:sandbox"  # the same image the sandbox tests use


def ensure_busybox_image(client: Any, name: str = BUSYBOX_IMAGE) -> str:
    """Build the busybox image unless it is there already (about a second); return its name."""
    from docker.errors import ImageNotFound

    from guard.sandbox import images

    try:
        labels = client.images.get(name).labels or {}
    except ImageNotFound:
        labels = {}
    if labels.get("guard.busybox") != "1":
        images.build_busybox(client, name)
    return name
