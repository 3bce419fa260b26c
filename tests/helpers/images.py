"""The tiny offline-built test image (static busybox), shared by the tests and the benchmarks."""

from __future__ import annotations

import contextlib
import fcntl
import signal
from collections.abc import Iterator
from typing import Any

BUSYBOX_IMAGE = "guard-test-busybox:sandbox"  # the same image the sandbox tests use


LOCK = "/tmp/guard-test-image-build{}.lock"


@contextlib.contextmanager
def build_lock(name: str = "") -> Iterator[None]:
    """One image build at a time across the test workers (pytest-xdist runs several processes
    on one engine, and the debootstrap builds share their download cache): the second worker
    waits, then finds the image built. ``name``: a lock of its own, for a build that shares
    nothing with the others (the appliance image: ten minutes on a clean machine).

    Waiting and building are not the test's time (``untimed``): a clean machine builds each
    image once, for minutes; a build killed at a test's timeout began again from nothing in
    the next test, and every test waiting behind it failed (a CI run: 40 errors)."""
    with untimed(), open(LOCK.format(f"-{name}" if name else ""), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def untimed() -> Iterator[None]:
    """Pause pytest-timeout's alarm (its ``signal`` method: an ``ITIMER_REAL``) for the block,
    then re-arm it with what was left."""
    left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left, interval)


def ensure_busybox_image(client: Any, name: str = BUSYBOX_IMAGE) -> str:
    """Build the busybox image unless it is there already (about a second); return its name."""
    from docker.errors import ImageNotFound

    from guard.sandbox import images

    with build_lock():
        try:
            labels = client.images.get(name).labels or {}
        except ImageNotFound:
            labels = {}
        if labels.get("guard.busybox") != "1":
            images.build_busybox(client, name)
    return name


def ensure_spec_image(client: Any, name: str, spec: dict[str, Any]) -> str:
    """Build image ``name`` offline from a debootstrap ``spec`` unless it is there (minutes
    once, then cached); the build lock only when it is not (other workers' builds hold it)."""
    from guard.sandbox import images

    if images.image_exists(client, name):
        return name
    with build_lock():
        if not images.image_exists(client, name):
            images.build_offline(client, name, spec=spec)
    return name
