"""How each kind of incident ends, said once, for triage (which ends them) and for whoever shows
an incident (``guard incidents show``, the console, MCP): every incident can end.

- A log rule's incident (its details name the ``rule``) ends when no matching line came for
  ``resolve_after`` (a monitor setting, default 10m; ``guard.triage.quiet``). A check passing
  on the same target (the container running) does not end it: the bug may still throw.
- A container's incident ends when the container is running again (a start by its restart
  policy counts once it stayed up).
- An intake alert's ends when its sender says it is resolved.
- A storm ends when its monitor's storm window passes with nothing folded into it.
- Any other check's ends when the check passes again.
With ``auto_resolve: false`` (or ``resolve_after: 0``) only a person ends it. A person can always
end one: ``guard resolve ID`` (the console, MCP); the fault firing again opens it again.
"""

from __future__ import annotations

from typing import get_args

from guard.config.intake import IntakeType
from guard.domain.durations import format_duration
from guard.store.models import Incident

DEFAULT_RESOLVE_AFTER = 600.0  # seconds without a matching line before a log rule's incident ends
STORM_KIND = "storm"


INTAKE_SOURCES = frozenset(get_args(IntakeType))  # an alert's sender says when it resolved


def ends_by_quiet(incident: Incident) -> bool:
    """Whether the incident is a log rule's: it ends when its lines stop, not on a check. An
    alert from an ``intake:`` source also carries a ``rule`` (its source, when grouped by
    rule), but it ends when its sender says ``resolved``."""
    return "rule" in (incident.details or {}) and incident.source not in INTAKE_SOURCES


def how_it_ends(
    incident: Incident, *, resolve_after: float | None = None, auto_resolve: bool = True
) -> str:
    """The sentence ``incidents show`` prints under ``ends`` (``resolve_after``: the monitor's,
    None when unknown: the default)."""
    by_hand = f"`guard resolve {incident.id}`"
    if ends_by_quiet(incident):
        after = DEFAULT_RESOLVE_AFTER if resolve_after is None else resolve_after
        if not after or not auto_resolve:
            return f"only by a person: {by_hand} (resolve_after: 0 or auto_resolve: false)"
        return f"when no matching line for {format_duration(after)} (resolve_after), or {by_hand}"
    if not auto_resolve:
        return f"only by a person: {by_hand} (auto_resolve: false)"
    if incident.kind == STORM_KIND:
        how = "when the storm window passes with nothing new"
    elif incident.monitor_id.startswith("intake:"):
        how = "when the alert's sender says it is resolved"
    elif incident.source == "docker" and incident.kind.startswith("container_"):
        how = "when the container is running again (after a restart, once it stays up)"
    else:
        how = "when the check passes again"
    return f"{how}, or {by_hand}"


def ends_for(incident: Incident, spec: object | None, default_auto_resolve: bool = True) -> str:
    """``how_it_ends`` for an incident of the monitor ``spec`` (a playbook's monitor entry;
    None when unknown, e.g. an intake source's or a removed monitor's)."""
    auto = getattr(spec, "auto_resolve", None)
    return how_it_ends(
        incident,
        resolve_after=getattr(spec, "resolve_after", None),
        auto_resolve=default_auto_resolve if auto is None else bool(auto),
    )
