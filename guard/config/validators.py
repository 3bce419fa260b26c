"""What many sections share: the strict base model and the checks of URLs and regexes."""

from __future__ import annotations

import re
from typing import TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationInfo

from guard.util.plainhttp import cleartext_host


class Section(BaseModel):
    """A nested settings section: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


INSECURE_HELP = (
    "send this section's credential over plain http to a host that is not loopback "
    "(only on a network you trust; otherwise Guard refuses to load)"
)
_URL = TypeVar("_URL", str, str | None)


def refuse_cleartext(url: _URL, info: ValidationInfo, *secrets: str) -> _URL:
    """A URL field's check: refuse it when it is plain http off this machine and the section
    sends a credential to it (one of the fields ``secrets``, declared before it, or a password
    in the URL itself), unless the section's ``allow_insecure_http`` (declared before it too)."""
    host = cleartext_host(url)
    if url is None or host is None or info.data.get("allow_insecure_http"):
        return url
    sent = [name for name in secrets if info.data.get(name) is not None]
    if not sent and urlsplit(url).password is None:
        return url
    raise ValueError(
        f"plain http to {host} would send {' and '.join(sent) or 'the password in the URL'} "
        "in clear; use https, or set allow_insecure_http: true in this section on a network "
        "you trust (loopback hosts: localhost, 127.0.0.0/8, ::1, are always allowed)"
    )


def valid_regex(where: str, value: str, *, secret: bool = False) -> str:
    """``value`` if it compiles (and, for a ``secret`` pattern, cannot match the empty string)."""
    try:
        compiled = re.compile(value)
    except re.error as exc:
        raise ValueError(f"{where}{value!r}: not a valid regex ({exc})") from None
    if secret and compiled.match(""):
        raise ValueError(
            f"{where}{value!r}: matches the empty string, so it would redact "
            "nothing useful; e.g. 'acme_[A-Za-z0-9]{32}'"
        )
    return value
