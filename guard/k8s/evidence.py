"""Container log lines as evidence: the text of a log read, and what an incident kept of it.

``log_text`` turns the body of ``GET .../pods/{pod}/log?timestamps=true&tailLines=N`` into
redacted text: timestamps off, each line and the whole bounded (the last lines kept).
``details.previous_logs`` (see ``guard.monitors.kubernetes_previous``) says which pod and
container a crash's lines came from and holds their text; the diagnosis puts them first in the
evidence shown to the human; the model's ``recent_logs`` returns them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from guard.redact import redact

LINE_CHARS = 2000
TEXT_CHARS = 16 * 1024
STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ")


def log_text(data: bytes) -> tuple[str, int]:
    """The lines of a log read without their timestamps, each cut to ``LINE_CHARS``, the last
    ``TEXT_CHARS`` of them, redacted; and how many lines that is."""
    lines = []
    for raw in data.split(b"\n"):
        if stamp := STAMP.match(raw):
            raw = raw[stamp.end() :]
        lines.append(raw.rstrip(b"\r").decode("utf-8", "replace")[:LINE_CHARS])
    while lines and not lines[-1]:
        lines.pop()
    text = "\n".join(lines)
    if len(text) > TEXT_CHARS:  # the last lines matter most
        text = text[-TEXT_CHARS:].partition("\n")[2]
    return redact(text), len(text.splitlines())


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
