"""Hardened command sandboxes for incident diagnosis and repair (see docs/SANDBOX.md).

``create_sandbox``/``SandboxPool`` give an incident its ``Sandbox``; ``reap_orphans`` (in
``guard.sandbox.docker``) cleans up after a crash; ``guard.sandbox.images`` builds the images.
"""

from guard.sandbox.base import (
    ExecResult,
    OutputBuffer,
    ReadOnlyMount,
    Sandbox,
    SandboxGrants,
    resolve_secrets,
)
from guard.sandbox.pool import SandboxPool, create_sandbox

__all__ = [
    "ExecResult",
    "OutputBuffer",
    "ReadOnlyMount",
    "Sandbox",
    "SandboxGrants",
    "SandboxPool",
    "create_sandbox",
    "resolve_secrets",
]
