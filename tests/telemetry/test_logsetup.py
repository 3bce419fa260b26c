"""Logging: with GUARD_LOG_FORMAT=json every line on stderr is a JSON object, libraries' too
(the standard ``logging`` module and ``warnings``), and secrets are masked in all of them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import logging, warnings
    from loguru import logger
    from guard.telemetry.logsetup import setup_logging

    setup_logging("INFO", "json", secrets=["hunter2-the-token"])
    logger.info("guard's own line")
    logging.getLogger("apscheduler.executors.default").warning(
        'Run time of job "poll (trigger: interval[0:00:01])" was missed by 0:00:01.5')
    logging.getLogger("asyncio").error("Task exception was never retrieved: hunter2-the-token")
    logging.getLogger("some.library").info("below WARNING: not shown")
    warnings.warn("a library's warning", RuntimeWarning)
    setup_logging("INFO", "json", secrets=["hunter2-the-token"])  # again: no line twice
    logging.getLogger("again").warning("once")
    """
)


def test_library_logs_and_warnings_are_json_lines_with_secrets_masked() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # each one a JSON object, or this fails
    messages = [r["message"] for r in records]
    assert messages[0] == "guard's own line"
    assert any("apscheduler.executors.default: Run time of job" in m for m in messages)
    [asyncio_line] = [r for r in records if r["message"].startswith("asyncio:")]
    assert asyncio_line["level"] == "ERROR" and "hunter2-the-token" not in proc.stderr
    assert any("RuntimeWarning: a library's warning" in m for m in messages)
    assert not any("below WARNING" in m for m in messages)
    assert messages.count("again: once") == 1
