"""Redaction: recall on the fake-secret corpus, false positives on ordinary lines, cost per line.

Guard's policy (``guard.redact``) is measured against detect-secrets' plugins (the maintained
rule set it was chosen over) when that package is installed: the same corpus, the same lines.

- recall: secrets of which no piece remains after redaction (for detect-secrets: secrets a
  finding on their line covers);
- false positives: ordinary lines (ids, hashes, base64 of non-secrets, URLs without
  credentials) that redaction changes (for detect-secrets: lines with any finding);
- cost: microseconds per line through the policy, for clean lines (most signals) and for lines
  that hold a secret; and per ``Signal`` (message, target and details).

Run alone: ``python -m bench.redaction [--seeds N] [--lines N] [--real LOG ...]`` (``--real``:
also count the lines of real log files, which hold no secrets, that redaction changes).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.common import machine
from guard.records import Signal
from guard.redact import Policy, redact_signal
from tests.secret_corpus import ordinary_lines, secrets


def _per_line_us(fn: Callable[[str], Any], lines: list[str], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for line in lines:
            fn(line)
        best = min(best, time.perf_counter() - t0)
    return round(best / len(lines) * 1e6, 2)


def _guard(corpus: list[tuple[str, str, str]], ordinary: list[str]) -> dict[str, Any]:
    policy = Policy()
    missed: Counter[str] = Counter()
    for kind, secret, line in corpus:
        out = policy.redact(line)
        if any(piece in out for piece in secret.splitlines() if not piece.startswith("-----")):
            missed[kind] += 1
    changed = [line for line in ordinary if policy.redact(line) != line]
    dirty = [line for _, _, line in corpus]
    signals = [
        Signal("api-log", "logfile", "/var/log/api.log", "api_error", line, details={"line": line})
        for line in ordinary
    ]
    t0 = time.perf_counter()
    for sig in signals:
        redact_signal(sig)
    per_signal = (time.perf_counter() - t0) / len(signals) * 1e6
    return {
        "recall": round(1 - sum(missed.values()) / len(corpus), 4),
        "missed": dict(missed),
        "false_positive_lines": len(changed),
        "false_positive_rate_pct": round(100 * len(changed) / len(ordinary), 2),
        "false_positive_examples": changed[:3],
        "us_per_clean_line": _per_line_us(policy.redact, ordinary),
        "us_per_line_with_a_secret": _per_line_us(policy.redact, dirty),
        "us_per_signal": round(per_signal, 2),
    }


def _detect_secrets(corpus: list[tuple[str, str, str]], ordinary: list[str]) -> dict[str, Any]:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:
        return {"skipped": "detect-secrets is not installed (pip install detect-secrets)"}
    plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]

    def scan(line: str) -> list[str]:
        return [
            str(found.secret_value)
            for p in plugins
            for piece in line.splitlines()
            for found in p.analyze_line(filename="app.log", line=piece, line_number=1)
        ]

    missed: Counter[str] = Counter()
    for kind, secret, line in corpus:
        if not any(v and (v in secret or secret in v) for v in scan(line)):
            missed[kind] += 1
    flagged = [line for line in ordinary if scan(line)]
    return {
        "plugins": len(plugins),
        "recall": round(1 - sum(missed.values()) / len(corpus), 4),
        "missed": dict(missed),
        "false_positive_lines": len(flagged),
        "false_positive_rate_pct": round(100 * len(flagged) / len(ordinary), 2),
        "false_positive_examples": flagged[:3],
        "us_per_clean_line": _per_line_us(scan, ordinary, repeat=1),
        "note": "finds lines, not values to replace: no placeholder kinds, and its entropy "
        "plugins flag whole name=value words",
    }


def _real_logs(paths: list[str]) -> dict[str, Any]:
    """Lines of real log files (no secrets expected) that the policy changes."""
    policy = Policy()
    found: dict[str, Any] = {}
    for path in paths:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        changed = [line for line in lines if policy.redact(line) != line]
        found[path] = {
            "lines": len(lines),
            "changed": len(changed),
            "changed_examples": [policy.redact(c)[:160] for c in changed[:3]],
        }
    return found


def run(seeds: int = 20, lines: int = 5000, real: list[str] | None = None) -> dict[str, Any]:
    corpus = [entry for i in range(seeds) for entry in secrets(f"bench-{i}")]
    ordinary = ordinary_lines(lines, seed=11)
    return {
        "what": f"{len(corpus)} fake secrets ({len(secrets())} shapes x {seeds} seeds), "
        f"{len(ordinary)} ordinary log lines",
        "guard": _guard(corpus, ordinary),
        "detect_secrets": _detect_secrets(corpus, ordinary),
        "real_logs": _real_logs(real or []),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument(
        "--real",
        nargs="*",
        default=[],
        metavar="LOG",
        help="also count lines of these real log files that redaction changes",
    )
    args = parser.parse_args()
    print(
        json.dumps(
            {"machine": machine(), "redaction": run(args.seeds, args.lines, args.real)}, indent=2
        )
    )


if __name__ == "__main__":
    main()
