"""What ``guard check-config`` says of probes before one is needed: a connection secret that
is not set, and a playbook's or skill's diagnostic probe that names a host (or port) the
``probes:`` grants do not, so it would be refused when an incident opens. Arguments that are
templates (``{{ incident.target }}``) are known only then, and are not checked."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from guard.actions.base import ActionError
from guard.actions.probes.net import ACTIONS as NET
from guard.actions.probes.reach import Reach
from guard.actions.probes.stores import ACTIONS as STORES
from guard.config.probes import ProbesSettings


def _templated(args: Mapping[str, Any]) -> bool:
    return any("{{" in str(v) for v in args.values())


def probe_warnings(
    settings: ProbesSettings,
    steps: Iterable[tuple[str, str, Mapping[str, Any]]],
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """Warnings for ``steps``: (where, action, args) of each diagnostic that is an action."""
    environ = os.environ if environ is None else environ
    reach = Reach(settings, environ)
    warnings = [
        f"probes.secrets {name} is not set in Guard's environment: a probe using it is refused"
        for name in settings.secrets
        if not environ.get(name)
    ]
    probes = {p.name: p for p in [*NET, *STORES]}
    for where, action, args in steps:
        probe = probes.get(action)
        if probe is None or _templated(args):
            continue
        try:
            for host, port in probe.reaches(args, reach):
                reach.check(action, host, port)
        except ActionError as exc:
            warnings.append(f"{where}: {exc}")
    return warnings
