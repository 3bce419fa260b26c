"""Secret redaction for every text Guard stores or sends (command output, messages, logs).

A ``Redactor`` holds named secret values and replaces each occurrence with ``[REDACTED:NAME]``.
Longer values are matched first, so a secret that contains another is hidden whole. It works on
``str`` and on ``bytes`` (the sandbox redacts raw output before cutting it to size, so a secret
straddling the cut is still caught). Redaction is a safety net for exact values, not a guarantee:
a command that prints a secret base64-encoded or reversed defeats it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping


def marker(name: str) -> str:
    """The text that replaces the secret called ``name``."""
    return f"[REDACTED:{name}]"


class Redactor:
    """A set of ``name -> value`` secrets to scrub from text. Thread-safe; cheap to call."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        for name, value in (secrets or {}).items():
            self.register(name, value)

    def register(self, name: str, value: str) -> None:
        """Hide ``value`` from now on, shown as ``[REDACTED:name]``. Empty values are ignored."""
        if not value:
            return
        with self._lock:
            self._values[value] = name
            self._text = self._bytes = None

    def register_all(self, values: Iterable[str], name: str = "secret") -> None:
        """Hide each of ``values`` under one generic name (e.g. Guard's own settings secrets)."""
        for value in values:
            self.register(name, value)

    @property
    def max_length(self) -> int:
        """Length in UTF-8 bytes of the longest registered value (0 if none)."""
        return max((len(v.encode()) for v in self._values), default=0)

    def __bool__(self) -> bool:
        return bool(self._values)

    def _patterns(self) -> tuple[re.Pattern[str], re.Pattern[bytes]] | None:
        with self._lock:
            if not self._values:
                return None
            if self._text is None or self._bytes is None:
                ordered = sorted(self._values, key=len, reverse=True)
                self._text = re.compile("|".join(re.escape(v) for v in ordered))
                self._bytes = re.compile(b"|".join(re.escape(v.encode()) for v in ordered))
            return self._text, self._bytes

    def redact(self, text: str) -> str:
        """``text`` with every registered value replaced by its marker."""
        patterns = self._patterns()
        if patterns is None:
            return text
        return patterns[0].sub(lambda m: marker(self._values[m.group(0)]), text)

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every registered value (UTF-8 encoded) replaced by its marker."""
        patterns = self._patterns()
        if patterns is None:
            return data
        return patterns[1].sub(
            lambda m: marker(self._values[m.group(0).decode()]).encode(), data
        )
