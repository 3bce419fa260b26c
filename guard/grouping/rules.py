"""What a log rule's matched line means for grouping: its fold key and its ``Grouping``.

Log monitors (files, Railway logs) fold the lines one check matched into one signal per
``fold`` key, with a count, and hand triage the ``Grouping`` that decides the incident:

- ``group_by: template``: the line's header is taken off (``format``) and the rest masked
  into tokens (``tokens.template_tokens``); lines with the same tokens fold, and triage mines
  the event template from them. The default of a *catch-all* rule (``catch_all``: ``.``,
  ``ERROR``, ``Exception|Traceback``), whose lines are many different events;
- ``group_by: rule``: every line of the rule folds into one signal and one incident. The
  default of an *alert-style* rule (any other: ``No space left on device``), which names one
  fault however it is worded; its first line's template is still mined, to be shown;
- ``group_by: [name, ...]``: one per value of those named groups of the rule's pattern.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import re2

from guard.domain.fingerprint import mask, mask_many
from guard.domain.records import Grouping
from guard.grouping.drain import keyed
from guard.grouping.headers import LogFormat
from guard.grouping.tokens import template_tokens
from guard.redact import redact

GroupBy = str | list[str]
GENERIC = frozenset(  # words that name no particular event: a rule of only these catches all
    [
        "error",
        "errors",
        "err",
        "exception",
        "exceptions",
        "traceback",
        "fatal",
        "panic",
        "critical",
        "crit",
        "severe",
        "warn",
        "warning",
        "warnings",
        "fail",
        "failed",
        "failure",
        "alert",
        "emerg",
        "emergency",
        "stack",
        "trace",
        "caused",
        "by",
        "unhandled",
        "uncaught",
    ]
)
_SYNTAX = re.compile(r"\\[A-Za-z]|\(\?P?<\w+>|\(\?[A-Za-z]+\)|\[[^\]]*\]|\{[^}]*\}")
CONTENT_CHARS = 1000  # what of a line a template is mined from
_RE2 = re2.Options()
_RE2.log_errors = False
LEARN_BYTES = 1 << 16  # of a block read, what header learning looks at
CACHED = 4096  # masked lines whose template tokens are remembered (a storm repeats a few)


@dataclass(frozen=True)
class RuleGrouper:
    """Groups the lines one rule matched."""

    group_by: GroupBy
    pattern: re.Pattern[str]
    format: LogFormat
    mined: bool = False  # ``rule`` by default: its template is mined too, to be shown
    _linear: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.group_by, list):  # named groups are read with RE2 where it can
            try:
                folded = "(?i)" if self.pattern.flags & re.IGNORECASE else ""
                linear = re2.compile(folded + self.pattern.pattern, _RE2)
            except re2.error:
                linear = None
            object.__setattr__(self, "_linear", linear)

    _cache: dict[str, tuple[int, tuple[str, ...], Grouping, bool]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def learn(self, block: bytes, *, cut: bool = False) -> None:
        """Show an ``auto`` format lines its monitor read (all of them, matched or not) while
        it learns the source's header; ``cut``: the block starts inside a line. The rules of
        one monitor share their format: one grouper's call is enough."""
        if self.format.learning:
            text = block[:LEARN_BYTES].decode("utf-8", "replace")
            lines = text.splitlines()
            self.format.learn(lines[1:] if cut else lines)

    def group(
        self, kind: str, line: str, seen: str | None = None
    ) -> tuple[tuple[str, ...], Grouping]:
        """``(fold key, grouping)`` of a line this rule matched.

        Lines equal once masked (they differ in times, ids, numbers) get the same template
        tokens, so those are worked out once per masked line: the repeats of one fault in a
        storm cost one ``mask`` each. ``seen``: that mask, already worked out (``masks``).
        """
        if self.group_by == "rule" and not self.mined:
            return (kind, "rule"), Grouping("rule")
        if isinstance(self.group_by, list):
            found = (self._linear or self.pattern).search(line[:CONTENT_CHARS])
            fields = tuple(
                (name, redact(found.group(name) or "") if found else "") for name in self.group_by
            )
            return (kind, "fields", *(v for _, v in fields)), Grouping("fields", fields=fields)
        if len(line) > CONTENT_CHARS:
            line = line[:CONTENT_CHARS]
        if seen is None:
            seen = mask(line)
        known = self._cache.get(seen)
        generation = self.format.generation
        if known is not None and known[0] == generation and known[3]:
            # its header keys events (an access log's status, masked in ``seen``): this line's
            known = self._cache.get(f"{seen}\0{self.format.parts(line)[2]}")
        if known is None or known[0] != generation:  # (a header learned since: work it out)
            if len(self._cache) >= CACHED:
                self._cache.clear()
            content, recognised, event = self.format.parts(line)
            # a leaked credential is one placeholder before it can become template text
            words = template_tokens(redact(content), header=not recognised)
            masked = " ".join([keyed(event), *words] if event else words)
            known = self._cache[seen] = (
                self.format.generation,
                (kind, "template", masked),
                # ``rule`` by default: one incident per rule and target, its templates mined
                Grouping("rule" if self.mined else "template", content=masked),
                event is not None,
            )
            if event is not None:
                self._cache[f"{seen}\0{event}"] = known
        return known[1], known[2]

    @property
    def templated(self) -> bool:
        """Whether a line's template is mined (``group_by: template``, or ``rule`` by
        default): its message, not the matched line, is what is grouped."""
        return self.group_by == "template" or self.mined


def masks(groupers: Sequence[RuleGrouper], found: Sequence[tuple[int, str]]) -> list[str | None]:
    """The ``seen`` argument of ``group`` for many ``(rule index, line)`` at once: the masks of
    the lines whose rule groups by template, worked out together (``mask_many``)."""
    wanted = [n for n, (i, _) in enumerate(found) if groupers[i].templated]
    out: list[str | None] = [None] * len(found)
    texts = [found[n][1][:CONTENT_CHARS] for n in wanted]
    for n, seen in zip(wanted, mask_many(texts), strict=True):
        out[n] = seen
    return out


def learn_headers(groupers: Sequence[RuleGrouper], block: bytes) -> None:
    """``RuleGrouper.learn`` once per distinct format of ``groupers``."""
    for grouper in {id(g.format): g for g in groupers}.values():
        grouper.learn(block)


def rule_groupers(
    rules: Sequence[tuple[GroupBy | None, re.Pattern[str]]],
    *,
    default: GroupBy | None,
    log_format: str,
) -> list[RuleGrouper]:
    """One ``RuleGrouper`` per rule; a rule without ``group_by`` takes the monitor's, and
    without either, ``template`` for a catch-all rule and ``rule`` for an alert-style one."""
    fmt = LogFormat(log_format)
    groupers = []
    for group_by, pattern in rules:
        chosen = default if group_by is None else group_by
        if chosen is None:
            alert = not catch_all(pattern.pattern)
            groupers.append(RuleGrouper("rule" if alert else "template", pattern, fmt, alert))
        else:
            groupers.append(RuleGrouper(chosen, pattern, fmt))
    return groupers


def catch_all(pattern: str) -> bool:
    """Whether a rule's ``pattern`` names no particular event (``.``, ``\\bERROR\\b``,
    ``Exception|Traceback``: only words in ``GENERIC``): its lines are many faults, one per
    event template. A pattern naming one (``disk full``, ``too many clients``) is an alert."""
    words = re.findall(r"[A-Za-z]{2,}", _SYNTAX.sub(" ", pattern))
    return all(word.lower() in GENERIC for word in words)


def group_by_problem(group_by: GroupBy | None, pattern: str) -> str | None:
    """Why ``group_by`` cannot be used with ``pattern`` (None when it can)."""
    if group_by is None or isinstance(group_by, str):
        return None
    if not group_by:
        return "group_by needs at least one group name (or use template or rule)"
    try:
        names = set(re.compile(pattern).groupindex)
    except re.error:
        return None  # the pattern's own check reports it
    unknown = [name for name in group_by if name not in names]
    if unknown:
        known = ", ".join(sorted(names)) or "none: add (?P<name>...) to the pattern"
        return (
            f"group_by names {', '.join(repr(n) for n in unknown)}, not a named group of "
            f"the pattern (its groups: {known})"
        )
    return None
