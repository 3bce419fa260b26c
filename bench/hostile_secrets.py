"""``/healthz`` while a watched log receives 64 KiB lines built against the redaction rules.

``bench.hostile`` aims at the matcher; these lines aim at the redactor. Each is one secret
shape's opening repeated to the logfile monitor's line limit (64 KiB) with no ending: ``eyJ-``
(a JWT's start) and ``sk-`` (an OpenAI key's), the two lines issue 33 measured at 0.43 / 0.56 s
for 32 KiB. Each also matches an ordinary rule (``ERROR``). Two cases:

- ``intake``: the agent off; the monitor cuts a message (and a template's content) to 1,000
  characters before it is redacted;
- ``diagnosis``: the agent on (``sandbox.backend: local``), and the playbook's diagnostic
  is ``tail -c 65536`` of the log, so each incident's evidence, 64 KiB of hostile text, is
  redacted whole.

``/healthz`` is asked every 50 ms throughout (its database write is made at most once per
5 s); then one ordinary fault is written, and the time until it is an incident is measured.
Reported per case: ``/healthz`` latency (p50, p99, max), the worst event-loop stall, the time
to the incident. Run alone: ``python -m bench.hostile_secrets [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import GuardProcess, machine, quiet
from bench.hostile import _ping, fault_to_incident, figures

LINE_BYTES = 64 << 10  # the logfile monitor's max_line_bytes
RULES = [  # the first rule that matches a line names its kind
    {"kind": "disk_full", "pattern": "No space left on device", "severity": "critical"},
    {"kind": "app_error", "pattern": "ERROR"},
]


def secret_lines(size: int = LINE_BYTES) -> list[str]:
    """One line per hostile shape, each ``size`` bytes (newline included)."""
    return [
        "ERROR " + ("eyJ-" * size)[: size - 7],
        "ERROR " + ("sk-" * size)[: size - 7],
    ]


def _home(root: Path, log: Path, diagnose: bool) -> GuardProcess:
    monitor = {
        "id": "app-log",
        "type": "logfile",
        "path": str(log),
        "every": "1s",
        "max_line_bytes": LINE_BYTES,
        "rules": RULES,
    }
    config: dict[str, Any] = {"agent": {"enabled": diagnose}}
    if diagnose:
        config["sandbox"] = {"backend": "local"}
    g = GuardProcess(root, [monitor], config)
    if diagnose:
        book = {
            "name": "bench",
            "monitors": [monitor],
            "diagnostics": [{"run": f"tail -c {LINE_BYTES} {log}", "kinds": ["app_error"]}],
        }
        (root / "playbooks" / "bench.yaml").write_text(yaml.safe_dump(book))
    return g


def run_case(rounds: int, diagnose: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="guard-bench-hostile-secrets-") as tmp:
        log = Path(tmp) / "app.log"
        log.write_text("")
        (Path(tmp) / "home").mkdir()
        g = _home(Path(tmp) / "home", log, diagnose)
        latencies: list[float] = []
        stop = threading.Event()
        written = lines = 0
        try:
            g.start()
            pinger = threading.Thread(target=_ping, args=(g.url("/healthz"), stop, latencies))
            pinger.start()
            try:
                with open(log, "a", encoding="utf-8") as f:
                    for _ in range(rounds):
                        for line in secret_lines():
                            f.write(line + "\n")
                            written += len(line) + 1
                            lines += 1
                        f.flush()
                        time.sleep(0.5)
                time.sleep(5 if diagnose else 2)  # matched, redacted (and diagnosed)
                to_incident = fault_to_incident(log, g.root / "data" / "guard.db")
            finally:
                stop.set()
                pinger.join()
            stall = g.metric("guard_event_loop_max_stall_seconds")
        finally:
            g.stop()
    return {
        "hostile_lines": lines,
        "hostile_bytes": written,
        **figures(latencies, stall, to_incident),
    }


def run(rounds: int = 5) -> dict[str, Any]:
    return {
        "line_bytes": LINE_BYTES,
        "intake": run_case(rounds, diagnose=False),
        "diagnosis": run_case(rounds, diagnose=True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hostile_secrets", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every hostile line")
    args = parser.parse_args()
    quiet()
    print(json.dumps({"machine": machine(), "hostile_secrets": run(args.rounds)}, indent=2))


if __name__ == "__main__":
    main()
