"""Typed probes: read-only diagnostics that need no shell and no sandbox (``probe.http``,
``probe.tcp``, ``probe.dns``, ``probe.tls``, ``probe.postgres``, ``probe.redis``).

They run in Guard's process, reach only what ``probes:`` grants, within ``probes.timeout``,
and return text cut to ``probes.output_limit`` with secrets redacted. ``guard.actions.kinds``
marks the family read-only: a probe is evidence, never a remedy (docs/PROBES.md).
"""

from guard.actions.probes.net import ACTIONS as NET
from guard.actions.probes.stores import ACTIONS as STORES

ACTIONS = [*NET, *STORES]
