"""Log line headers: the timestamp, host, pid, level... in front of what a line says.

A header differs between two lines of one event (the time, the pid, the thread) and can be the
same for two different events, so templates are mined from the *content* only: the line with
its header taken off. ``LogFormat`` knows how: a named preset, a pattern of the user's with a
``message`` group (``format:`` on a monitor), or ``auto``. ``auto`` learns the source's header
from its first lines when the presets do not fit them (``learner.HeaderLearner``), and on each
line tries that header, then the presets in order; when none fits, it skips leading tokens that
only a header has (timestamps, numbers, levels, bracketed ids: ``tokens.skip_header``). A line
no format fits is its own content. One ``LogFormat`` is one source (a monitor's log).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from guard.grouping.continuation import Continuations
from guard.grouping.header_learning import HeaderLearner

_TS = (
    r"(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{2,4}/\d{2}/\d{2}[ -]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"
)
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|SEVERE|FATAL|CRITICAL|CRIT)"
_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"

# Named presets, most specific first (the order ``auto`` tries them in). Each has ``message``.
PRESETS: dict[str, str] = {
    # 2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack ...
    "windows-cbs": r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}, (?P<level>\w+)\s+(?P<component>\w+)\s+"
    r"(?P<message>.*)$",
    # 03-17 16:13:38.811  1702  2395 D WindowManager: message
    "logcat": r"^\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\s+\d+\s+\d+ (?P<level>[VDIWEFA]) "
    r"(?P<component>[^:]*?)\s*: (?P<message>.*)$",
    # I1203 18:06:48.123456    1234 server.go:42] message
    "glog": r"^(?P<level>[IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ (?P<component>[^\]\s]+)\] "
    r"(?P<message>.*)$",
    # [Sun Dec 04 04:47:44 2005] [error] [pid 12] [client 1.2.3.4] message   (Apache httpd)
    "apache-error": r"^\[\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \d{4}\] "
    r"\[(?P<level>[\w:]+)\](?: \[pid [\d:a-z ]+\])?(?: \[client [^\]]+\])? "
    r"(?P<message>.*)$",
    # 2026/12/02 18:06:48 [error] 123#123: *45 message   (nginx)
    "nginx-error": r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} \[(?P<level>\w+)\] \d+#\d+: "
    r"(?:\*\d+ )?(?P<message>.*)$",
    # 10.0.0.1 - alice [02/Dec/2026:18:06:48 +0000] "GET /cart HTTP/1.1" 502 157 "-" "UA"
    # (nginx's and Apache's access logs, common or combined): the status tells events apart
    # (``event``), the method is the message; the client, path, size, referrer and user agent
    # are values (a 502 is one fault on every route)
    "access": r'^\S+ \S+ \S+ \[[^\]]+\] "(?P<message>[^" ]*)[^"]*" (?P<event>\d{3}) ',
    # 2026-12-02 18:06:48.123 UTC [1234] LOG:  message   (PostgreSQL)
    # (a STATEMENT or QUERY line is keyed by the error it follows: ``continuation.py``)
    "postgres": r"^" + _TS + r"(?: [A-Z]{2,5})? \[(?P<writer>\d+)\](?: \S+@\S+)? "
    r"(?P<level>(?P<continues>STATEMENT|QUERY)|(?P<aside>DETAIL|HINT|CONTEXT|LOCATION)|[A-Z]+\d?):"
    r"\s+(?P<message>.*)$",
    # 2017-05-16 00:07:25.394 2931 INFO nova.compute.manager [req-1 - - - - -] message
    # (Python oslo.log: OpenStack services; a leading file name is allowed)
    "oslo": r"^(?:\S+ )?" + _TS + r" \d+ (?P<level>" + _LEVEL + r") (?P<component>[\w.]+) "
    r"\[[^\]]*\] (?P<message>.*)$",
    # 2026-12-02 18:06:48,123 [main] ERROR com.example.Api - message   (log4j/logback)
    "log4j": r"^\[?"
    + _TS
    + r"\]?\s+(?:-\s+)?(?:\[(?P<thread>[^\]]*)\]\s+)?(?P<level>"
    + _LEVEL
    + r")\s+(?:\[.*?\]\s+)?(?:(?P<component>[\w.$-]+)(?::\d+)?\s*(?::|\s-)\s+)?"
    r"(?P<message>.*)$",
    # Dec  2 18:06:48 host program[123]: message   (RFC 3164; also RFC 5424-ish ISO stamps)
    "syslog": r"^(?:<\d+>\d? ?)?(?:"
    + _MON
    + r"\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}|"
    + _TS
    + r")\s+(?P<host>\S+)\s+(?P<component>[^\s:\[]+)(?:\[\d+\])?(?: \([^)]*\))?:\s*"
    r"(?P<message>.*)$",
    # 2026-12-02T18:06:48Z ERROR message   (a timestamp, maybe a level, then the message)
    "iso": r"^\[?" + _TS + r"\]?\s+(?:\[?(?P<level>" + _LEVEL + r")\]?:?\s+)?(?P<message>.*)$",
}


@dataclass(frozen=True)
class LogFormat:
    """Takes a line's header off: ``auto``, a preset name, or a pattern with ``(?P<message>)``."""

    spec: str = "auto"
    _patterns: list[re.Pattern[str]] = field(init=False, repr=False, compare=False)
    _learner: HeaderLearner | None = field(init=False, repr=False, compare=False)
    _continuations: Continuations = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        patterns = _compile(self.spec)
        object.__setattr__(self, "_patterns", patterns)
        learner = HeaderLearner(self._preset) if self.spec == "auto" else None
        object.__setattr__(self, "_learner", learner)
        object.__setattr__(self, "_continuations", Continuations())

    @property
    def learning(self) -> bool:
        """``auto`` still wants the source's first lines (``learn``)."""
        return self._learner is not None and self._learner.learning

    @property
    def generation(self) -> int:
        """Changes whenever the learned header does (what ``content`` returns may change)."""
        return 0 if self._learner is None else self._learner.generation

    def learn(self, lines: Iterable[str]) -> None:
        """Show ``auto`` lines of the source (every line read, not only matched ones)."""
        if self._learner is not None:
            self._learner.feed(lines)

    def content(self, line: str) -> tuple[str, bool]:
        """What ``line`` says without its header, and whether a format recognised one."""
        message, recognised, _ = self.parts(line)
        return message, recognised

    def parts(self, line: str) -> tuple[str, bool, str | None]:
        """``content``, and the header's ``event`` group when the format has one: a value that
        tells events apart however alike their messages are (an access log's status, the
        error a ``STATEMENT:`` line follows); ``None`` when it has none, ``""`` when this line
        has none but the next may (then ``parts`` must see every line of the source)."""
        if self._learner is not None:
            found = self._learner.header(line)
            if found is not None:
                return found.group("message") or "", True, None
        for pattern in self._patterns:
            found = pattern.match(line)
            if found is not None:
                if self._learner is not None:
                    self._learner.seen(line, True)
                if Continuations.applies(pattern):  # "" for a line that continues none
                    return found.group("message") or "", True, self._continuations.event(found)
                event = found.group("event") if "event" in pattern.groupindex else None
                return found.group("message") or "", True, event
        if self._learner is not None:
            self._learner.seen(line, False)
        return line, False, None

    def _preset(self, line: str) -> str | None:
        """The message the first preset that fits ``line`` leaves (None: none fits)."""
        for pattern in self._patterns:
            found = pattern.match(line)
            if found is not None:
                return found.group("message") or ""
        return None


def _compile(spec: str) -> list[re.Pattern[str]]:
    if spec == "auto":
        return [re.compile(p) for p in PRESETS.values()]
    if spec in PRESETS:
        return [re.compile(PRESETS[spec])]
    pattern = re.compile(spec)
    if "message" not in pattern.groupindex:
        raise ValueError("a format pattern needs a (?P<message>...) group")
    return [pattern]


def format_problem(spec: str) -> str | None:
    """Why ``spec`` is not a usable ``format:`` (None when it is)."""
    if spec == "auto" or spec in PRESETS:
        return None
    try:
        _compile(spec)
    except re.error as exc:
        return f"not a preset ({', '.join(['auto', *PRESETS])}) and not a valid pattern: {exc}"
    except ValueError as exc:
        return f"{exc} (or use a preset: {', '.join(['auto', *PRESETS])})"
    return None
