"""The stack's one image, built offline: Debian's nginx, python3, PostgreSQL and Redis in a
debootstrap rootfs (the sandbox toolbox's builder with another spec), cached by its spec's hash
like the toolbox, so a clean machine builds it once in a few minutes and then imports it in
seconds."""

from __future__ import annotations

from typing import Any

from guard.sandbox import images
from tests.helpers.images import ensure_spec_image

SPEC: dict[str, Any] = {
    "suite": "bookworm",
    "mirror": images.toolbox_spec()["mirror"],
    "base_image": "debian:bookworm-slim",
    "user": "0:0",  # each container names its own user (postgres runs as `postgres`)
    "packages": ["nginx-light", "postgresql-15", "procps", "python3", "redis-server"],
    "tools": ["nginx", "python3", "psql", "redis-server", "redis-cli", "ps"],
}
IMAGE = f"guard-test-stack:{images.spec_hash(SPEC)}"


def ensure_stack_image(client: Any) -> str:
    """Build the stack image unless it is there (debootstrap 2-4 min once, then cached); the
    build lock only when it is not (other workers' builds hold it for minutes)."""
    return ensure_spec_image(client, IMAGE, SPEC)
