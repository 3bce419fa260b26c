"""Log storm: 100,000 error lines in 10 s must become one incident, without memory growth.

A ``guard run`` process follows a log file (checked every second); a writer appends 100,000
copies of one fault (differing only in timestamp, request id, client IP and duration) over
10 s. Reported side by side: the same process before and after the storm (RSS), the lines
Guard counted, the incident events it emitted (from ``/metrics``) and the Telegram messages it
sent: Guard talks to the tests' Bot API server on 127.0.0.1 (the real python-telegram-bot
stack), which counts every ``sendMessage``. Run alone: ``python -m bench.storm [--lines N]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import guard_process, machine, rss_mb
from tests.fakes.telegram import TelegramServer

TOKEN = "123456:storm-bench"
CHAT = -1001

SIGNALS = 'guard_signals_total{kind="db_too_many_connections",source="logfile",status="firing"}'


def run(lines: int = 100_000, seconds: float = 10.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="guard-bench-storm-log-") as tmp:
        log = Path(tmp) / "api.log"
        log.write_text("")
        monitors = [
            {
                "id": "api-log",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [
                    {
                        "kind": "db_too_many_connections",
                        "pattern": "too many clients",
                        "severity": "critical",
                    },
                    {"kind": "api_error", "pattern": r"\bERROR\b"},
                ],
            }
        ]
        telegram = TelegramServer(TOKEN).start()
        config = {
            "telegram": {
                "bot_token": TOKEN,
                "chat_id": CHAT,
                "allowed_user_ids": [1],
                "api_base_url": telegram.url,
                "poll_timeout": "1s",
            },
            "sandbox": {"backend": "local"},
        }  # no diagnostics image needed
        with guard_process(monitors, "storm", config) as g:
            time.sleep(3)
            before = rss_mb(g.pid)
            peak = before
            batches = 100
            t0 = time.monotonic()
            with open(log, "a") as f:
                for b in range(batches):
                    f.writelines(
                        f"2026-12-02T18:{i % 60:02d}:{i * 7 % 60:02d}.{i % 1000:03d}Z FATAL "
                        f"req={uuid.uuid4()} client 10.0.{i % 256}.{i % 200} took {i % 5000}ms:"
                        " sorry, too many clients already\n"
                        for i in range(b * lines // batches, (b + 1) * lines // batches)
                    )
                    f.flush()
                    peak = max(peak, rss_mb(g.pid))
                    time.sleep(max(0.0, t0 + (b + 1) * seconds / batches - time.monotonic()))
            wrote_in = time.monotonic() - t0
            deadline = time.monotonic() + 60
            while g.metric(SIGNALS) < lines and time.monotonic() < deadline:
                peak = max(peak, rss_mb(g.pid))
                time.sleep(0.2)
            caught_up = time.monotonic() - t0
            time.sleep(5)  # the outbox sends within a second; leave room for a second message
            after = rss_mb(g.pid)
            counted = g.metric(SIGNALS)
            opened = g.metric('guard_incident_events_total{type="opened"}')
            other = sum(
                g.metric(f'guard_incident_events_total{{type="{t}"}}')
                for t in ("reopened", "flapping", "resolved")
            )
        messages = [
            m["params"]
            for m in telegram.sent("sendMessage")
            if str(m["params"].get("chat_id")) == str(CHAT)
        ]
        telegram.stop()
    return {
        "what": f"{lines} error lines written over {seconds:g}s to a followed log",
        "lines_written": lines,
        "write_seconds": round(wrote_in, 2),
        "lines_counted": int(counted),
        "all_counted_after_s": round(caught_up, 2),
        "incidents_opened_events": int(opened),
        "other_incident_events": int(other),
        "telegram_messages": len(messages),
        "telegram_first_message": (messages[0].get("text", "")[:120] if messages else None),
        "rss_mb_before": before,
        "rss_mb_peak": peak,
        "rss_mb_after": after,
        "rss_growth_mb": round(after - before, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "storm": run(args.lines, args.seconds)}, indent=2))


if __name__ == "__main__":
    main()
