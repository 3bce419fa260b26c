"""Secret redaction: one policy for every text Guard takes in or lets out.

The policy (``Policy``) replaces each secret it finds with ``[REDACTED:<kind>]``:

- Guard's own configured secrets, raw, URL-encoded and base64-encoded (at any alignment, so one
  inside a longer base64 string such as ``Basic`` credentials is found too);
- ``redact.extra_patterns`` from the config; ``redact.allow`` keeps a match that is not a secret;
- private key blocks (``guard.redact.keys``), then known credential shapes (Guard's
  ``guard.redact.rules``, gitleaks' rules as data in ``guard.redact.gitleaks``) and secrets by
  context (``guard.redact.context``), all RE2 regexes run by ``guard.redact.engine`` in time
  linear in the text; URL-encoded runs are decoded and redacted too.

The same placeholder for every value of a kind keeps fingerprints stable: one fault leaking two
different tokens is one incident. The process-wide policy is set once from the settings
(``configure``) and applied with ``redact``/``redact_value`` at ingestion (signals, in
``guard.app``) and at every exit (the store, the chat channels, the CLI, logs, skills, memory,
reports).

A ``Redactor`` adds named values (a sandbox's granted secrets, shown as ``[REDACTED:NAME]``) in
front of the policy and works on bytes too: the sandbox redacts raw output before cutting it to
size, so a secret straddling the cut is still caught. Redaction is a safety net, not a proof: a
secret printed reversed, split or in an unknown shape gets through.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from guard.redact import gitleaks
from guard.redact.context import CONTEXT
from guard.redact.engine import Engine, Rule, compile_rule, marker
from guard.redact.keys import KeyLines, redact_blocks
from guard.redact.rules import SHAPES

PLACEHOLDER = re.compile(r"\[REDACTED:[a-z-]+\]")


@dataclass(frozen=True)
class ExtraPattern:
    """A site-specific secret shape from ``redact.extra_patterns``."""

    pattern: str
    kind: str = "custom"


def encoded_forms(value: str) -> set[str]:
    """``value`` raw, URL-encoded, and as it appears inside base64 at each of the 3 alignments."""
    forms = {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")}
    raw = value.encode()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        start, end = -(-8 * shift // 6), 8 * (shift + len(raw)) // 6
        core = encoded[start:end]
        if len(core) >= 8:
            forms |= {core, core.replace("+", "-").replace("/", "_")}
    return {f for f in forms if len(f) >= 4}


class Policy:
    """Built-in rules, optional extra patterns and allow-list, and Guard's own secret values."""

    def __init__(
        self,
        *,
        extra: Sequence[ExtraPattern] = (),
        allow: Sequence[str] = (),
        secrets: Iterable[str] = (),
    ) -> None:
        self.allow = [re.compile(a) for a in allow]
        own = [_extra_rule(p) for p in extra]
        self._python = [(p, rx) for p, rx in own if isinstance(rx, re.Pattern)]
        self.rules: list[Rule] = [r for _, r in own if isinstance(r, Rule)] + builtin_rules()
        self._engine = Engine(self.rules, self._allowed if self.allow else None)
        values = sorted(
            {f for s in secrets if len(s) >= 4 for f in encoded_forms(s)}, key=len, reverse=True
        )
        self._own = re.compile("|".join(map(re.escape, values))) if values else None

    def _allowed(self, secret: str) -> bool:
        return any(a.search(secret) for a in self.allow)

    def redact(self, text: str) -> str:
        """``text`` with every secret the policy knows replaced by its placeholder."""
        if not text:
            return text
        if self._own is not None:
            text = self._own.sub(marker("guard-secret"), text)
        for pattern, rx in self._python:
            text = _python_rule(pattern, rx, text, self._allowed if self.allow else None)
        text = self._engine.redact(redact_blocks(text))
        if "%" in text:
            text = _ENCODED.sub(self._decoded, text)
        return text

    def _decoded(self, m: Any) -> str:
        """A URL-encoded run redacted as its decoded text (kept encoded if that holds none)."""
        raw: str = m.group(0)
        decoded = urllib.parse.unquote_plus(raw) if "%" in raw else raw
        if decoded == raw:
            return raw
        clean = self._engine.redact(redact_blocks(decoded))
        return raw if clean == decoded else clean

    def findings(self, text: str) -> list[str]:
        """The kinds of secret found in ``text`` (for tests and the benchmark)."""
        return [m.group(0)[10:-1] for m in PLACEHOLDER.finditer(self.redact(text))]


# a run of URL-encoded text (a query string, a URL inside a URL): decoded, then redacted
_ENCODED = re2.compile(
    r"[A-Za-z0-9._~%+:/?#@=&-]{0,1000}%[0-9A-Fa-f]{2}[A-Za-z0-9._~%+:/?#@=&-]{0,1000}"
)


@functools.lru_cache(maxsize=1)
def builtin_rules() -> list[Rule]:
    """Guard's shape rules, gitleaks' rules, then the context rules, in the order they run."""
    return [*SHAPES, *gitleaks.rules(), *CONTEXT]


def _extra_rule(p: ExtraPattern) -> tuple[str, Rule | re.Pattern[str]]:
    """A configured pattern as an engine rule where RE2 reads it as Python does, else as a
    Python regex (its author's to keep linear)."""
    compiled = re.compile(p.pattern)
    group = 1 if compiled.groups else 0
    rule = Rule(p.kind, p.pattern, group=group, source="config")
    if _re2_reads(p.pattern):
        return p.pattern, rule
    return p.kind, compiled


# constructs RE2 reads differently from Python, or not at all (as ``guard.util.saferegex``
# lists them;
# not imported from there: it brings loguru, and the fast CLI path must stay light)
_DIVERGENT = re.compile(r"\\[AZz]|\{,|\[:")


def _re2_reads(pattern: str) -> bool:
    if _DIVERGENT.search(pattern):
        return False
    try:
        compile_rule(Rule("probe", pattern))
    except re2.error:
        return False
    return True


def _python_rule(
    kind: str, rx: re.Pattern[str], text: str, allowed: Callable[[str], bool] | None
) -> str:
    def replace(m: re.Match[str]) -> str:
        group = 1 if rx.groups else 0
        secret = m.group(group)
        if not secret or (allowed is not None and allowed(secret)):
            return m.group(0)
        whole, start, end = m.group(0), m.start(group) - m.start(0), m.end(group) - m.start(0)
        return whole[:start] + marker(kind) + whole[end:]

    return rx.sub(replace, text)


_policy: Policy | None = None  # built on first use: compiling the rules costs ~0.1 s
_policy_lock = threading.Lock()


def configure(settings: Any) -> Policy:
    """Make the process-wide policy the one ``settings`` describe (its ``redact`` section and
    secrets); returns it."""
    section = settings.redact
    return use(
        Policy(
            extra=[ExtraPattern(p.pattern, p.kind) for p in section.extra_patterns],
            allow=section.allow,
            secrets=settings.secret_values(),
        )
    )


def policy() -> Policy:
    """The process-wide policy (the default one until ``configure`` or ``use``)."""
    global _policy
    if _policy is None:
        with _policy_lock:
            if _policy is None:
                _policy = Policy()
    return _policy


def redact(text: str) -> str:
    """``text`` through the process-wide policy."""
    return policy().redact(text)


def redact_value(value: Any) -> Any:
    """``value`` with every string inside it (dicts, lists, tuples) redacted; keys are kept."""
    if isinstance(value, str):
        return policy().redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


# Allow-list probes: text of every kind (a pattern matching all of them matches everything),
# and secrets of typical shapes (assembled from pieces: no file holds a credential shape).
_ANY_TEXT = ("x", "Z9", "a b", "-", "[REDACTED:x]", "\u00e9t\u00e9", "0" * 80)
_TYPICAL_SECRETS = {
    "aws-access-key": "AK" + "IA" + "QX7V2KZL4M3N5P6R",
    "github-token": "gh" + "p_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4",
    "jwt": "ey"
    + "JhbGciOiJIUzI1NiJ9.ey"
    + "JzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "stripe-key": "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "password": "Hunter2!xQ9",
    "private-key": "MII" + "EvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
}


def allow_warnings(patterns: Sequence[str]) -> list[str]:
    """What ``check-config`` says of ``redact.allow`` patterns that would keep secrets in clear:
    one that matches any text turns redaction off; one that matches typical secrets lets them
    leave. (Patterns are valid regexes by then: the settings checked them.)"""
    warnings = []
    for i, pattern in enumerate(patterns):
        rx = re.compile(pattern)
        where = f"redact.allow[{i}] {pattern!r}"
        if all(rx.search(t) for t in _ANY_TEXT):
            warnings.append(
                f"{where}: matches any text, so no secret a rule finds is redacted; "
                "allow only a known false positive, e.g. '^sk_test_' or '^EXAMPLE-[0-9]+$'"
            )
            continue
        kinds = [k for k, v in _TYPICAL_SECRETS.items() if rx.search(v)]
        if kinds:
            warnings.append(
                f"{where}: matches typical secrets ({', '.join(kinds)}), which would then leave "
                "in clear; anchor it to the one false positive it is for, e.g. '^sk_test_'"
            )
    return warnings


_key_lines = KeyLines()


def redact_signal(signal: Any) -> Any:
    """A ``Signal`` with its target, message and details redacted (the same one if clean).

    Its message is also a line of its source (the monitor and its target): once a private key
    has begun there, its body lines are key material (``guard.redact.keys``)."""
    message = _key_lines.redact((signal.monitor_id, signal.target), signal.message)
    target, message = policy().redact(signal.target), policy().redact(message)
    details = redact_value(signal.details)
    if (target, message, details) == (signal.target, signal.message, signal.details):
        return signal
    return dataclasses.replace(signal, target=target, message=message, details=details)


class Redactor:
    """Named ``name -> value`` secrets to scrub, then the process-wide policy. Thread-safe."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()
        self._text: re.Pattern[str] | None = None
        for name, value in (secrets or {}).items():
            self.register(name, value)

    def register(self, name: str, value: str) -> None:
        """Hide ``value`` (and its URL/base64 forms) from now on, as ``[REDACTED:name]``."""
        if not value:
            return
        with self._lock:
            for form in encoded_forms(value) | {value}:
                self._values.setdefault(form, name)
            self._text = None

    def register_all(self, values: Iterable[str], name: str = "secret") -> None:
        """Hide each of ``values`` under one generic name (e.g. Guard's own settings secrets)."""
        for value in values:
            self.register(name, value)

    @property
    def max_length(self) -> int:
        """Length in UTF-8 bytes of the longest registered value, at least that of a PEM key
        block's first line (so output cut to size keeps what a shape needs to be recognised)."""
        return max((len(v.encode()) for v in self._values), default=64)

    def __bool__(self) -> bool:
        return True

    def _pattern(self) -> re.Pattern[str] | None:
        with self._lock:
            if not self._values:
                return None
            if self._text is None:
                ordered = sorted(self._values, key=len, reverse=True)
                self._text = re.compile("|".join(re.escape(v) for v in ordered))
            return self._text

    def redact(self, text: str) -> str:
        """``text`` with every registered value replaced by its marker, then the policy."""
        pattern = self._pattern()
        if pattern is not None:
            text = pattern.sub(lambda m: marker(self._values[m.group(0)]), text)
        return policy().redact(text)

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` redacted as UTF-8 text (undecodable bytes pass through unchanged)."""
        text = data.decode("utf-8", "surrogateescape")
        return self.redact(text).encode("utf-8", "surrogateescape")


def use(new: Policy) -> Policy:
    """Make ``new`` the process-wide policy (``configure`` builds one from the settings)."""
    global _policy
    with _policy_lock:
        _policy = new
    return new
