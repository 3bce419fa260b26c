"""Redaction: recall on two fake-secret corpora, false positives, cost per line, hostile lines.

Guard's policy (``guard.redact``) is measured against detect-secrets' plugins (the maintained
rule set it was chosen over) when that package is installed: the same corpus, the same lines.

- recall: secrets of which no piece remains after redaction (for detect-secrets: secrets a
  finding on their line covers);
- false positives: ordinary lines (ids, hashes, base64 of non-secrets, URLs without
  credentials) that redaction changes (for detect-secrets: lines with any finding);
- cost: microseconds per line through the policy, for clean lines (most signals) and for lines
  that hold a secret; and per ``Signal`` (message, target and details).

- held-out recall: the second corpus (``tests/helpers/secret_corpus_heldout.py``, written from
  vendors' documented formats, not the one the rules are tuned on), per group, each entry's
  lines fed one at a time from one source as a log monitor's signals are;
- real logs: lines of the 16 Loghub systems and the captured daemon logs (``bench.grouping``'s
  corpus) that redaction changes (none should: they hold no secret);
- hostile lines: each rule alone on adversarial lines at the 64 KiB line limit, the worst
  milliseconds per line (issue 33: each rule at most 10 ms);
- ``--against REV``: the same cost figures for the redaction of git revision ``REV``, measured
  on the same lines in a subprocess, side by side.

Run alone: ``python -m bench.redaction [--seeds N] [--lines N] [--real LOG ...] [--against REV]``
(``--real``: also count the lines of these real log files that redaction changes).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.common import REPO, machine
from guard.domain.records import Signal
from guard.redact import Policy, builtin_rules, redact_signal
from guard.redact.engine import Engine
from guard.redact.keys import KeyLines
from tests.helpers.secret_corpus import hostile_lines, ordinary_lines, secrets
from tests.helpers.secret_corpus_heldout import GROUPS, heldout, pieces
from tests.helpers.secret_corpus_shapes import SUBGROUPS, shapes, verdict

# issue 39's group on the redaction before rules were added for it (commit 6d7a2e8, 5 seeds);
# ``--against 6d7a2e8`` measures it again
SHAPES_FIRST_RUN: dict[str, Any] = {
    "revision": "6d7a2e8",
    "shapes": 84,
    "seeds": 5,
    "caught": 122,
    "partial": 28,
    "leaked": 270,
    "recall_pct": 29.0,
    "per_subgroup": {
        "punctuation": {"caught": 40, "partial": 0, "leaked": 120},
        "headers": {"caught": 60, "partial": 0, "leaked": 45},
        "framework": {"caught": 22, "partial": 28, "leaked": 60},
        "key-lines": {"caught": 0, "partial": 0, "leaked": 45},
    },
}


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


def _heldout(seeds: int) -> dict[str, Any]:
    """Recall per group on the held-out corpus (an entry is caught when no piece survives)."""
    policy = Policy()
    shapes: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    missed: set[str] = set()
    for seed in range(seeds):
        for group, name, secret, lines in heldout(f"held-{seed}"):
            keys = KeyLines()
            out = "\n".join(policy.redact(keys.redact("source", line)) for line in lines)
            shapes[group] += 1
            if any(piece in out for piece in pieces(secret)):
                missed.add(f"{group}: {name}")
            else:
                caught[group] += 1
    per_group = {
        g: {
            "shapes": shapes[g] // seeds,
            "caught": caught[g],
            "of": shapes[g],
            "recall_pct": round(100 * caught[g] / shapes[g], 1),
        }
        for g in GROUPS
    }
    return {
        "shapes": sum(shapes.values()) // seeds,
        "seeds": seeds,
        "per_group": per_group,
        "missed": sorted(missed),
    }


def _shape_outputs(entries: list[list[str]]) -> list[str]:
    """Each entry's lines through a fresh source's key memory and the policy, joined."""
    policy = Policy()
    out = []
    for lines in entries:
        keys = KeyLines()
        out.append("\n".join(policy.redact(keys.redact("source", line)) for line in lines))
    return out


def _shapes(seeds: int, outputs: Callable[[list[list[str]]], list[str]]) -> dict[str, Any]:
    """Issue 39's group (``tests/helpers/secret_corpus_shapes.py``): caught, partial and leaked per
    subgroup, the entries redacted by ``outputs``."""
    entries = [e for seed in range(seeds) for e in shapes(f"shape-{seed}")]
    found = outputs([lines for _, _, _, lines in entries])
    per: dict[str, Counter[str]] = {g: Counter() for g in SUBGROUPS}
    wrong: set[str] = set()
    for (sub, name, secret, lines), out in zip(entries, found, strict=True):
        v = verdict(secret, lines, out)
        per[sub][v] += 1
        if v != "caught":
            wrong.add(f"{v}: {sub}: {name}")
    total = sum((c for c in per.values()), Counter())
    return {
        "shapes": len(entries) // seeds,
        "seeds": seeds,
        **{v: total[v] for v in ("caught", "partial", "leaked")},
        "recall_pct": round(100 * total["caught"] / len(entries), 1),
        "per_subgroup": {
            g: {v: c[v] for v in ("caught", "partial", "leaked")} for g, c in per.items()
        },
        "not_caught": sorted(wrong),
    }


def _loghub() -> dict[str, Any]:
    """Lines of the grouping benchmark's real logs (16 Loghub systems, captured daemon logs)
    that redaction changes."""
    from bench.grouping import load_systems

    policy = Policy()
    found: dict[str, Any] = {"lines": 0, "changed": 0, "changed_examples": []}
    for system in load_systems():
        changed = [line for line in system.lines if policy.redact(line) != line]
        found["lines"] += len(system.lines)
        found["changed"] += len(changed)
        found["changed_examples"] += [f"{system.name}: {policy.redact(c)[:160]}" for c in changed]
    found["changed_examples"] = found["changed_examples"][:5]
    return found


def _best_of(n: int, fn: Callable[[str], Any], line: str) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn(line)
        best = min(best, time.perf_counter() - t0)
    return best


def _hostile() -> dict[str, Any]:
    """Each rule alone on adversarial 64 KiB lines: the worst milliseconds one line costs, warm
    (best of 3) and on its first run (when RE2 builds the DFA states the line needs)."""
    worst: list[tuple[float, str]] = []
    cold: list[tuple[float, str]] = []
    for rule in builtin_rules():
        engine = Engine([rule])
        slowest = first = 0.0
        for line in hostile_lines(rule.needs[:2]):
            first = max(first, _best_of(1, engine.redact, line))  # RE2 builds its DFA here
            slowest = max(slowest, _best_of(3, engine.redact, line))  # the machine's noise off
        name = rule.source if rule.source != "guard" else f"guard:{rule.kind}"
        worst.append((slowest * 1000, name))
        cold.append((first * 1000, name))
    worst.sort(reverse=True)
    cold.sort(reverse=True)
    policy = Policy()
    whole = 0.0
    for line in hostile_lines(("eyJ", "sk-")):
        whole = max(whole, _best_of(3, policy.redact, line))
    return {
        "rules": len(worst),
        "line_chars": len(hostile_lines(())[0]),
        "worst_rule_ms": round(worst[0][0], 2),
        "worst_rules": [f"{src}: {ms:.2f} ms" for ms, src in worst[:3]],
        "rules_over_10_ms": sum(1 for ms, _ in worst if ms > 10),
        "first_run_worst_rules": [f"{src}: {ms:.2f} ms" for ms, src in cold[:3]],
        "first_run_rules_over_10_ms": sum(1 for ms, _ in cold if ms > 10),
        "whole_policy_worst_line_ms": round(whole * 1000, 2),
    }


_AGAINST = r"""
import json, sys, time
from guard.redact import Policy
from guard.redact.keys import KeyLines
ordinary, dirty, entries = json.load(sys.stdin)
policy = Policy()
def per_line(lines):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for line in lines:
            policy.redact(line)
        best = min(best, time.perf_counter() - t0)
    return round(best / len(lines) * 1e6, 2)
def shaped(lines):
    keys = KeyLines()
    return "\n".join(policy.redact(keys.redact("source", line)) for line in lines)
print(json.dumps({"us_per_clean_line": per_line(ordinary),
                  "us_per_line_with_a_secret": per_line(dirty),
                  "shapes": [shaped(lines) for lines in entries]}))
"""


def _against(
    rev: str, corpus: list[tuple[str, str, str]], ordinary: list[str], seeds: int
) -> dict[str, Any]:
    """Revision ``rev``'s redaction on the same lines (a subprocess that imports that
    revision's ``guard`` package): its cost figures, and its figures on issue 39's group."""
    import subprocess
    import sys
    import tempfile

    entries = [lines for seed in range(seeds) for _, _, _, lines in shapes(f"shape-{seed}")]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", rev, "guard"], cwd=REPO, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        done = subprocess.run(
            [sys.executable, "-c", _AGAINST],
            input=json.dumps([ordinary, [line for _, _, line in corpus], entries]),
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp,
            env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"},
        )
    found = json.loads(done.stdout.splitlines()[-1])
    outputs = found.pop("shapes")
    return {"revision": rev, **found, "shapes": _shapes(seeds, lambda _: outputs)}


def run(
    seeds: int = 20, lines: int = 5000, real: list[str] | None = None, against: str | None = None
) -> dict[str, Any]:
    corpus = [entry for i in range(seeds) for entry in secrets(f"bench-{i}")]
    ordinary = ordinary_lines(lines, seed=11)
    return {
        "what": f"{len(corpus)} fake secrets ({len(secrets())} shapes x {seeds} seeds), "
        f"{len(ordinary)} ordinary log lines",
        "guard": _guard(corpus, ordinary),
        "against": _against(against, corpus, ordinary, max(1, seeds // 4)) if against else None,
        "heldout": _heldout(max(1, seeds // 4)),
        "shapes": {
            "first_run": SHAPES_FIRST_RUN,
            "now": _shapes(max(1, seeds // 4), _shape_outputs),
        },
        "loghub_and_daemon_logs": _loghub(),
        "hostile_64k": _hostile(),
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
    parser.add_argument(
        "--against", metavar="REV", help="also measure the cost of git revision REV's redaction"
    )
    args = parser.parse_args()
    result = run(args.seeds, args.lines, args.real, args.against)
    print(json.dumps({"machine": machine(), "redaction": result}, indent=2))


if __name__ == "__main__":
    main()
