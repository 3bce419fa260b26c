"""Turn pydantic validation errors into one line per problem: ``file: field.path: reason``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

# Parts pydantic inserts into error locations for union members and validators; they name no
# field a user wrote ("monitors[1].expect_status.list[int]" -> "monitors[1].expect_status").
_MEMBER_PREFIXES = (
    "int",
    "str",
    "float",
    "bool",
    "list[",
    "dict[",
    "tuple[",
    "set[",
    "literal[",
    "is-instance[",
    "lax-or-strict",
    "constrained-",
    "function-",
    "tagged-union",
    "nullable",
    "union[",
    "json-or-python",
    "decimal",
    "date",
    "timedelta",
)

Skip = Callable[[int, str], bool]


def valid_regex(value: str | None) -> str | None:
    """A pydantic field check: ``value`` compiles as a Python regex (None passes)."""
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regex {value!r}: {exc}") from None
    return value


def _is_member(part: str) -> bool:
    return part in {"int", "str", "float", "bool", "decimal"} or part.startswith(
        tuple(p for p in _MEMBER_PREFIXES if not p.isalpha())
    )


def format_loc(loc: Sequence[int | str], *, skip: Skip | None = None) -> str:
    """``("monitors", 1, "every")`` -> ``monitors[1].every``."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        if _is_member(part) or (skip and skip(i, part)):
            continue
        out += f".{part}" if out else part
    return out


def _reason(err: Any) -> str:
    msg: str = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "missing":
        return "field required"
    return msg


def format_validation_error(
    label: str,
    exc: ValidationError,
    *,
    skip: Skip | None = None,
    line_of: Callable[[Sequence[int | str]], int | None] | None = None,
) -> list[str]:
    """One ``label: field: reason`` line per problem, with ``(line N)`` where known.

    Errors from the members of one union (``int | list[int]``) are merged into one line.
    """
    grouped: dict[str, list[Any]] = {}
    for err in exc.errors(include_url=False):
        raw = err["loc"]
        cut = next((i for i, p in enumerate(raw) if isinstance(p, str) and _is_member(p)), None)
        key = format_loc(raw[:cut] if cut is not None else raw, skip=skip)
        grouped.setdefault(key, []).append((err, cut))
    lines = []
    for loc, errs in grouped.items():
        members = list(dict.fromkeys(str(e["loc"][c]) for e, c in errs if c is not None))
        if len(members) > 1:
            deepest, cut = max(errs, key=lambda ec: len(ec[0]["loc"]))
            sub = format_loc(deepest["loc"][cut + 1 :])
            why = f"{sub}: {_reason(deepest)}" if sub else _reason(deepest)
            msg = f"expected {' or '.join(members)} ({why})"
        else:
            msg = "; ".join(dict.fromkeys(_reason(e) for e, _ in errs))
        where = f"{label}: {loc}: {msg}" if loc else f"{label}: {msg}"
        line = line_of(errs[0][0]["loc"]) if line_of else None
        lines.append(f"{where} (line {line})" if line else where)
    return lines
