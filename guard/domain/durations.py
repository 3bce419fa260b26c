"""Human durations (``10s``, ``5m``, ``1h30m``, ``250ms``) as used in config and playbooks."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Return seconds for ``value``; raise ``ValueError`` naming the bad input."""
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"invalid duration {value!r}: must not be negative")
        return float(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if text and _PART.sub("", text) == "":
            return sum(float(n) * _UNITS[u] for n, u in _PART.findall(text))
        try:
            seconds = float(text)
        except ValueError:
            pass
        else:
            if seconds >= 0:
                return seconds
    raise ValueError(f"invalid duration {value!r} (use e.g. 10s, 5m, 1h30m)")


def format_duration(seconds: float) -> str:
    """Render seconds the way a person writes them (``90`` -> ``1m30s``)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    out, rest = "", round(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out or "0s"


def _validate(value: Any) -> float:
    return parse_duration(value)


Duration = Annotated[
    float,
    BeforeValidator(_validate),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^(\d+(\.\d+)?(ms|s|m|h|d))+$"},
                {"type": "number", "minimum": 0},
            ],
            "description": "a duration such as 10s, 5m, 1h30m (a bare number is seconds)",
        }
    ),
]
"""A pydantic field type: accepts ``10s``-style strings or numbers, stores seconds."""
