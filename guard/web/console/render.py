"""The console's Jinja2 environment: templates shipped in the package, every value escaped,
and incident text shown as text (control characters made visible, very long values cut)."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from guard.util.textsafe import printable

if TYPE_CHECKING:
    from jinja2 import Environment

TEXT_LIMIT = 65_536  # characters of one value a page shows (a 1 MB log line is cut, and said)


def text(value: Any, limit: int = TEXT_LIMIT) -> str:
    """``value`` as plain text: no control characters (terminal escapes), at most ``limit``."""
    shown = printable("" if value is None else value)
    if len(shown) > limit:
        return f"{shown[:limit]}… ({len(shown) - limit} more characters)"
    return shown


def when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


@cache
def environment() -> Environment:
    """Built with the first page shown: a ``guard run`` nobody browses never loads Jinja2."""
    from jinja2 import Environment, PackageLoader

    env = Environment(
        loader=PackageLoader("guard.web.console", "templates"),
        autoescape=True,  # always: every template, every value
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["text"] = text
    env.filters["when"] = when
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
