"""Logging with loguru: readable text by default, one JSON object per line with
``GUARD_LOG_FORMAT=json``. Every line goes through the redaction policy before it is written.

Libraries log with the standard ``logging`` module (APScheduler's "Execution of job ...
skipped: maximum number of running instances reached" on a loaded machine, asyncio's "Task
exception was never retrieved") and Python's
``warnings``: both are routed into loguru at WARNING and above, so they are JSON lines too and
redacted like Guard's own, never raw text on stderr."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

from loguru import logger

from guard.redact import Redactor, redact, redact_value


def _redactor(named: Redactor) -> Any:
    """A patcher that runs every line (message and bound fields) through the redaction policy,
    plus ``named`` (Guard's own secrets, in case the policy is not configured yet)."""

    def patch(record: Any) -> None:
        record["message"] = named.redact(record["message"])
        extra = record["extra"]
        for key, value in extra.items():
            if isinstance(value, str | dict | list):
                extra[key] = redact_value(value)

    return patch


class _RedactedStderr:
    """stderr for loguru, each formatted line (tracebacks included) redacted on the way out."""

    def __init__(self, named: Redactor) -> None:
        self.named = named

    def write(self, text: str) -> None:
        sys.stderr.write(self.named.redact(text))

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def _json_sink(message: Any) -> None:
    r = message.record
    line: dict[str, Any] = {
        "time": r["time"].isoformat(),
        "level": r["level"].name,
        "message": r["message"],
        "logger": r["name"],
    }
    line.update({k: v for k, v in r["extra"].items() if k != "secrets"})
    if r["exception"] is not None:
        line["exception"] = "".join(
            __import__("traceback").format_exception(
                r["exception"].type, r["exception"].value, r["exception"].traceback
            )
        )
    sys.stderr.write(redact(json.dumps(line, default=str)) + "\n")


LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _LibraryLogs(logging.Handler):
    """Records of the standard ``logging`` module, into loguru (named by their logger)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a library's bad format arguments: still say something
            text = str(record.msg)
        level = record.levelname if record.levelname in LEVELS else "WARNING"
        logger.opt(exception=record.exc_info or None).log(level, "{}: {}", record.name, text)


def _route_library_logs() -> None:
    """The root logger (WARNING and above) and ``warnings`` into loguru (idempotent)."""
    root = logging.getLogger()
    if not any(isinstance(h, _LibraryLogs) for h in root.handlers):
        root.addHandler(_LibraryLogs())
    logging.captureWarnings(True)


def setup_logging(level: str = "INFO", fmt: str | None = None, secrets: Iterable[str] = ()) -> None:
    """(Re)configure the global loguru logger."""
    fmt = (fmt or os.environ.get("GUARD_LOG_FORMAT") or "text").lower()
    logger.remove()
    named = Redactor()
    named.register_all(secrets, "guard-secret")
    logger.configure(patcher=_redactor(named))
    _route_library_logs()
    if fmt == "json":
        logger.add(_json_sink, level=level.upper(), backtrace=False, diagnose=False)
    else:
        logger.add(
            _RedactedStderr(named),
            level=level.upper(),
            backtrace=False,
            diagnose=False,
            format="<green>{time:YYYY-MM-DD HH:mm:ss}</green> <level>{level: <7}</level> {message}",
        )
