"""Turn pydantic validation errors into one line per problem: ``file: field.path: reason``,
with the YAML line of the field where it is known (``line_finder``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
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
Loc = tuple[int | str, ...]


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


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def yaml_line_map(text: str) -> dict[Loc, int]:
    """Map each key path in a YAML document to its 1-based line number."""
    lines: dict[Loc, int] = {}

    def walk(node: yaml.Node, path: Loc) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                lines[sub] = key.start_mark.line + 1
                walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return lines
    if root is not None:
        walk(root, ())
    return lines


def line_finder(
    text: str,
    *,
    drop: Callable[[Sequence[int | str], int], bool] | None = None,
) -> Callable[[Sequence[int | str]], int | None]:
    """``line_of(loc)``: the YAML line of the field at ``loc`` in ``text``, or of its nearest
    parent that has one. ``drop(loc, i)`` leaves out location parts that name no field (a
    union's tag)."""
    lines = yaml_line_map(text)

    def line_of(loc: Sequence[int | str]) -> int | None:
        clean = tuple(p for i, p in enumerate(loc) if drop is None or not drop(loc, i))
        while clean:
            if clean in lines:
                return lines[clean]
            clean = clean[:-1]
        return None

    return line_of
