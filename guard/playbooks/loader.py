"""Load every playbook in a folder; report each problem as ``file: field: reason (line N)``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from guard.domain.exceptions import ConfigError
from guard.playbooks.models import Playbook, monitor_types
from guard.playbooks.services import service_problems
from guard.util.validation import display_path, format_loc, format_validation_error, line_finder


def _is_union_tag(loc: Sequence[int | str], i: int) -> bool:
    return i > 0 and isinstance(loc[i - 1], int) and loc[i] in monitor_types()


def _problems(label: str, text: str, exc: ValidationError) -> list[str]:
    line_of = line_finder(text, drop=_is_union_tag)

    out: list[str] = []
    rest: list[Any] = []
    for err in exc.errors(include_url=False):
        if err["type"] != "union_tag_invalid":
            rest.append(err)
            continue
        loc = (*err["loc"], "type")
        tag = (err.get("ctx") or {}).get("tag", "?")
        msg = f"{label}: {format_loc(loc)}: unknown monitor type {tag!r} (expected one of: "
        msg += ", ".join(monitor_types()) + ")"
        line = line_of(loc)
        out.append(f"{msg} (line {line})" if line else msg)
    if rest:
        remaining = ValidationError.from_exception_data(exc.title, rest)
        out += format_validation_error(
            label, remaining, skip=lambda i, p: p in monitor_types(), line_of=line_of
        )
    return out


_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def _parse(text: str) -> Any:
    """libyaml's safe loader where PyYAML has it (1,200 monitors: 1.6 s less to start, less
    memory kept); a document it refuses is parsed again by the pure one, whose error and line
    the message gives as it always did."""
    if _FAST_LOADER is not None:
        try:
            return yaml.load(text, Loader=_FAST_LOADER)  # a safe loader: SafeConstructor
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def load_playbook(path: Path) -> Playbook:
    """Parse and validate one playbook file."""
    label = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{label}: cannot read: {exc.strerror}"]) from None
    try:
        data: Any = _parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([f"{label}: invalid YAML: {problem}{where}"]) from None
    if not isinstance(data, dict):
        raise ConfigError([f"{label}: a playbook must be a mapping with 'name' and 'monitors'"])
    try:
        return Playbook.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_problems(label, text, exc)) from None


def check_playbooks(folder: Path) -> tuple[list[Playbook], dict[Path, list[str]]]:
    """Load every ``*.yaml``/``*.yml`` in ``folder``: the playbooks, and each failing file's
    problems (a missing folder is the folder's problem). ``guard run`` and ``guard check-config``
    validate with this; the playbook watcher uses it to name the file an edit broke."""
    if not folder.is_dir():
        return [], {folder: [f"{display_path(folder)}: playbooks_dir does not exist"]}
    books: list[tuple[Path, Playbook]] = []
    problems: dict[Path, list[str]] = {}
    seen: dict[str, str] = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            book = load_playbook(path)
        except ConfigError as exc:
            problems.setdefault(path, []).extend(exc.problems)
            continue
        for i, mon in enumerate(book.monitors):
            if mon.id in seen:
                problems.setdefault(path, []).append(
                    f"{display_path(path)}: monitors[{i}].id: duplicate monitor id {mon.id!r} "
                    f"(also in {seen[mon.id]})"
                )
            seen[mon.id] = display_path(path)
        books.append((path, book))
    for path, found in service_problems(books).items():  # services span playbooks
        problems.setdefault(path, []).extend(found)
    return [book for _, book in books], problems


def load_playbooks(folder: Path) -> list[Playbook]:
    """Load every ``*.yaml``/``*.yml`` in ``folder``; collect all problems before raising."""
    books, problems = check_playbooks(folder)
    if problems:
        raise ConfigError([p for found in problems.values() for p in found])
    return books


def playbook_json_schema() -> str:
    """The JSON Schema of a playbook file, for editors (``guard playbooks schema``)."""
    schema = Playbook.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Guard playbook"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
