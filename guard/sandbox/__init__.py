"""Hardened command sandboxes for incident diagnosis and repair (see docs/SANDBOX.md).

``create_sandbox``/``WarmSandboxPool`` (the ``SandboxPool`` port) give an incident its
``Sandbox``; ``reap_orphans`` (in ``guard.sandbox.docker``) cleans up after a crash;
``guard.sandbox.images`` builds the images.
"""

from guard.sandbox.base import (
    ExecResult,
    OutputBuffer,
    ReadOnlyMount,
    Sandbox,
    SandboxGrants,
    SandboxPool,
    resolve_secrets,
)
from guard.sandbox.pool import WarmSandboxPool, create_sandbox

__all__ = [
    "ExecResult",
    "OutputBuffer",
    "ReadOnlyMount",
    "Sandbox",
    "SandboxGrants",
    "SandboxPool",
    "WarmSandboxPool",
    "create_sandbox",
    "resolve_secrets",
]
