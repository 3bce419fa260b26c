"""Logging with loguru: readable text by default, one JSON object per line with
``GUARD_LOG_FORMAT=json``. Every configured secret is masked before a line is written."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from typing import Any

from loguru import logger


def _redactor(secrets: Iterable[str]) -> Any:
    values = sorted({s for s in secrets if s}, key=len, reverse=True)

    def patch(record: Any) -> None:
        if values:
            msg = record["message"]
            for value in values:
                msg = msg.replace(value, "[REDACTED]")
            record["message"] = msg

    return patch


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
        line["exception"] = "".join(__import__("traceback").format_exception(
            r["exception"].type, r["exception"].value, r["exception"].traceback))
    sys.stderr.write(json.dumps(line, default=str) + "\n")


def setup_logging(level: str = "INFO", fmt: str | None = None,
                  secrets: Iterable[str] = ()) -> None:
    """(Re)configure the global loguru logger."""
    fmt = (fmt or os.environ.get("GUARD_LOG_FORMAT") or "text").lower()
    logger.remove()
    logger.configure(patcher=_redactor(secrets))
    if fmt == "json":
        logger.add(_json_sink, level=level.upper(), backtrace=False, diagnose=False)
    else:
        logger.add(sys.stderr, level=level.upper(), backtrace=False, diagnose=False,
                   format="<green>{time:YYYY-MM-DD HH:mm:ss}</green> <level>{level: <7}</level> "
                   "{message}")
