"""Keep the bot token out of every log line python-telegram-bot and httpx write.

PTB puts the token in each request URL (``/bot<TOKEN>/getUpdates``); httpx logs every request
URL at INFO and PTB logs requests at DEBUG. Both use the standard ``logging`` module, which Guard
does not otherwise configure (its last-resort handler would print warnings raw to stderr). So
their loggers are routed into loguru through one handler that first masks the token, httpx is
held at WARNING, and they stop propagating to the root logger.
"""

from __future__ import annotations

import logging

from loguru import logger

LOGGERS = ("telegram", "httpx", "httpcore")


class _ToLoguru(logging.Handler):
    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        except Exception:
            text = str(record.msg)
        for secret in self.secrets:
            text = text.replace(secret, "[REDACTED]")
        level = (
            record.levelname
            if record.levelname in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
            else "INFO"
        )
        logger.opt(depth=0).log(level, "{}: {}", record.name, text)


def install(secrets: list[str]) -> None:
    """Route the libraries' loggers through the masking handler (idempotent)."""
    handler = _ToLoguru(secrets)
    for name in LOGGERS:
        lib = logging.getLogger(name)
        for old in [h for h in lib.handlers if isinstance(h, _ToLoguru)]:
            lib.removeHandler(old)
        lib.addHandler(handler)
        lib.propagate = False
        lib.setLevel(logging.WARNING if name in ("httpx", "httpcore") else logging.INFO)
    # the outbox reports a 429 itself (and waits); PTB's limiter would log it as an error too
    logging.getLogger("telegram.ext.AIORateLimiter").setLevel(logging.CRITICAL)
