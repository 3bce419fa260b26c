"""The last lines of a crashed container, as the kubernetes monitor kept them on an incident.

``details.previous_logs`` (see ``guard.monitors.kubernetes_previous``) says which pod and
container they came from and holds their text (redacted). The diagnosis puts them first in the
evidence shown to the human; the model's ``recent_logs`` returns them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def previous_block(
    details: Mapping[str, Any], lines: int | None = None, chars: int | None = None
) -> str:
    """The kept lines (the last ``lines`` of them, of at most ``chars`` in all) under a line
    naming their container; empty when the incident has none."""
    kept = details.get("previous_logs")
    if not isinstance(kept, Mapping) or not kept.get("text"):
        return ""
    text = str(kept["text"]).splitlines()
    if lines is not None:
        text = text[-lines:]
    while chars is not None and len(text) > 1 and sum(len(t) + 1 for t in text) > chars:
        text = text[1:]
    which = "the previous instance" if kept.get("previous", True) else "the instance"
    head = (
        f"$ last {len(text)} lines of {which} of container {kept.get('container')} "
        f"in pod {kept.get('pod')}"
    )
    return "\n".join([head, *text])
