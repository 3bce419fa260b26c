"""Grouping accuracy on real logs: do Guard's incidents mean one fault each?

Corpus: the 16 systems of Loghub's labelled 2k samples (``bench/data/loghub-2k.jsonl.gz``,
see ``bench/data/LICENSE-loghub.txt``: Zhu et al., "Loghub", ISSRE 2023; each line labelled
with its event, both as first published and as corrected by Khan et al., ICSE 2022), plus
Guard's own labelled samples of nginx, PostgreSQL, Kubernetes events and Python tracebacks
(``bench/grouping_samples.py``), plus the *daemons* group: logs captured from real daemons
driven through their faults, labelled by construction (``bench/daemon_logs.py``, stored in
``bench/data/daemon-logs.jsonl.gz``), averaged on their own.

Per system, every raw line (header included) goes into a log file watched by one catch-all
rule, and ``guard run --once`` (storm breaker raised out of the way) turns it into incidents.
The same lines are replayed in-process through the same functions (the header learned from the
same first lines) to know which line landed in which incident; the run checks that the replay's
incidents and counts equal ``guard run``'s.

Printed per system and on average:
- grouping accuracy (Zhu et al., ICSE 2019): the share of lines whose incident holds exactly
  the lines of their own event;
- incidents per event template;
- the same two for masking alone (the fingerprint before templates);
- the CPU cost of grouping per matched line (header, masks, mining, the template table).

``--compare-drain3`` also runs drain3 (``pip install drain3``) on the same masked tokens with the
same similarity and depth: the evaluation behind docs/GROUPING.md's choice of miner.

Run: ``python -m bench.grouping [--systems A,B] [--no-guard-run] [--declared] [--compare-drain3]
[--zone -03] [--json]``. Every system runs on ``format: auto`` (no per-system setup);
``--declared`` gives BGL, HPC, HealthApp and Proxifier the header patterns a user of them could
write instead; ``--zone`` prints the captured PostgreSQL log's times in another zone.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.common import REPO, machine
from bench.grouping_samples import samples
from guard.domain.fingerprint import mask
from guard.grouping.rules import learn_headers, rule_groupers
from guard.grouping.templates import TemplateBook
from guard.store.db import open_database

CORPUS = REPO / "bench" / "data" / "loghub-2k.jsonl.gz"
DAEMONS = REPO / "bench" / "data" / "daemon-logs.jsonl.gz"  # bench.daemon_logs --write
CATCH_ALL = "."
# Headers of no common shape, declared with ``format:`` as a user of these systems could
# (``--declared``); by default every system runs on ``format: auto``, as a new user runs it.
DECLARED_FORMATS = {
    "BGL": r"^\S+ \d+ \S+ \S+ \S+ \S+ \S+ \S+ \S+ (?P<message>.*)$",
    "HPC": r"^\d+ \S+ \S+ \S+ \d+ \d+ (?P<message>.*)$",
    "HealthApp": r"^[^|]*\|[^|]*\|[^|]*\|(?P<message>.*)$",
    "Proxifier": r"^\[[^\]]*\] \S+(?: \*\d+)? - (?P<message>.*)$",
}


class System:
    """One system's lines with their labels."""

    def __init__(
        self,
        name: str,
        lines: list[str],
        labels: dict[str, list[str]],
        public: bool,
        daemon: bool = False,
    ) -> None:
        self.name, self.lines, self.labels, self.public = name, lines, labels, public
        self.daemon = daemon  # captured from a real daemon, labelled by construction

    declared = False  # ``--declared``: the patterns above instead of ``auto``
    zone = ""  # ``--zone``: the captured PostgreSQL log's zone instead of UTC

    @property
    def log_format(self) -> str:
        return DECLARED_FORMATS.get(self.name, "auto") if self.declared else "auto"

    @property
    def multiline(self) -> str:
        """The sample of tracebacks and the daemons' logs are labelled line by line: they are
        replayed as lines (a traceback as one event is what tests/monitors/test_multiline.py
        checks)."""
        return "none" if self.name == "Python" or self.daemon else "auto"


def load_systems() -> list[System]:
    rows: dict[str, list[dict[str, str]]] = collections.defaultdict(list)
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            rows[row["system"]].append(row)
    systems = [
        System(
            name,
            [r["line"] for r in rs],
            {"original": [r["event"] for r in rs], "corrected": [r["corrected"] for r in rs]},
            public=True,
        )
        for name, rs in rows.items()
    ]
    for name, labelled in samples().items():
        systems.append(
            System(
                name,
                [line for line, _ in labelled],
                {"original": [label for _, label in labelled]},
                public=False,
            )
        )
    daemons: dict[str, list[dict[str, str]]] = collections.defaultdict(list)
    if DAEMONS.exists():
        with gzip.open(DAEMONS, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                daemons[row["system"]].append(row)
    for name, rs in daemons.items():
        labels = {"original": [r["event"] for r in rs]}
        lines = [r["line"] for r in rs]
        if System.zone and name.startswith("PostgreSQL"):
            lines = [line.replace(" UTC [", f" {System.zone} [", 1) for line in lines]
        systems.append(System(name, lines, labels, public=False, daemon=True))
    return systems


def grouping_accuracy(groups: Sequence[object], truth: Sequence[str]) -> float:
    """The share of lines whose group holds exactly the lines of their event."""
    members: dict[object, list[int]] = collections.defaultdict(list)
    for i, group in enumerate(groups):
        members[group].append(i)
    sizes = collections.Counter(truth)
    correct = 0
    for idx in members.values():
        events = {truth[i] for i in idx}
        if len(events) == 1 and sizes[truth[idx[0]]] == len(idx):
            correct += len(idx)
    return correct / len(truth)


def replay(system: System) -> tuple[list[object], float]:
    """The incident (fingerprint key) of each line, as Guard's triage assigns it, and the
    grouping cost per line in microseconds (header, masks, template mining)."""
    grouper = rule_groupers(
        [(None, re.compile(CATCH_ALL))], default="template", log_format=system.log_format
    )[0]
    db = open_database("sqlite://")
    book = TemplateBook()
    groups: list[object] = []
    started = time.process_time()  # CPU time: figures hold on a busy machine too
    learn_headers([grouper], "".join(f"{line}\n" for line in system.lines).encode())
    with db.session() as session:
        for line in system.lines:
            _, grouping = grouper.group("log", line)
            groups.append(book.assign(session, grouping.content)[0])
    cost = (time.process_time() - started) / len(system.lines) * 1e6
    db.dispose()
    return groups, cost


def drain3_replay(system: System) -> tuple[list[object], float]:
    """The same lines, headers and masks, clustered by drain3 instead of Guard's miner."""
    import logging

    from drain3 import TemplateMiner  # type: ignore[import-not-found]
    from drain3.template_miner_config import (  # type: ignore[import-not-found]
        TemplateMinerConfig,
    )

    logging.getLogger("drain3").setLevel(logging.ERROR)
    grouper = rule_groupers(
        [(None, re.compile(CATCH_ALL))], default="template", log_format=system.log_format
    )[0]
    config = TemplateMinerConfig()
    config.drain_sim_th, config.drain_depth = TemplateBook().similarity, TemplateBook().depth
    config.profiling_enabled = False
    miner = TemplateMiner(config=config)
    learn_headers([grouper], "".join(f"{line}\n" for line in system.lines).encode())
    contents = [grouper.group("log", line)[1].content for line in system.lines]
    started = time.process_time()
    groups: list[object] = [miner.add_log_message(c)["cluster_id"] for c in contents]
    return groups, (time.process_time() - started) / len(contents) * 1e6


def guard_run_once(system: System) -> list[int]:
    """``guard run --once`` over the system's log; the incidents' counts."""
    with tempfile.TemporaryDirectory(prefix="guard-bench-grouping-") as tmp:
        root = Path(tmp)
        log = root / f"{system.name}.log"
        log.write_text("".join(f"{line}\n" for line in system.lines), encoding="utf-8")
        (root / "playbooks").mkdir()
        monitor = {
            "id": "corpus",
            "type": "logfile",
            "path": str(log),
            "start": "beginning",
            "format": system.log_format,
            "multiline": system.multiline,
            "rules": [{"kind": "log", "pattern": CATCH_ALL}],
        }
        (root / "playbooks" / "corpus.yaml").write_text(
            yaml.safe_dump({"name": "corpus", "monitors": [monitor]})
        )
        config = root / "guard.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "data_dir": str(root / "data"),
                    "playbooks_dir": str(root / "playbooks"),
                    "skills_dir": str(root / "skills"),
                    "log_level": "WARNING",
                    "triage": {"max_new_incidents": 10**9},
                }
            )
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
        env.update(GUARD_CONFIG=str(config), PYTHONPATH=str(REPO))
        guard = [sys.executable, "-m", "guard.cli"]
        subprocess.run(
            [*guard, "run", "--once"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        listed = subprocess.run(
            [*guard, "incidents", "list", "--json", "--limit", "1000000"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return sorted(int(i["count"]) for i in json.loads(listed.stdout))


def measure(system: System, *, guard_run: bool, drain3: bool = False) -> dict[str, Any]:
    groups, cost = replay(system)
    others = drain3_replay(system) if drain3 else None
    masked = [mask(line) for line in system.lines]
    result: dict[str, Any] = {
        "system": system.name,
        "lines": len(system.lines),
        "format": "auto" if system.log_format == "auto" else "declared",
        "cost_us_per_line": round(cost, 1),
    }
    for label_set, truth in system.labels.items():
        events = len(set(truth))
        result[label_set] = {
            "events": events,
            "accuracy": round(grouping_accuracy(groups, truth), 3),
            "incidents_per_event": round(len(set(groups)) / events, 2),
            "masking_alone_accuracy": round(grouping_accuracy(masked, truth), 3),
            "masking_alone_incidents_per_event": round(len(set(masked)) / events, 2),
        }
        if others is not None:
            result[label_set]["drain3_accuracy"] = round(grouping_accuracy(others[0], truth), 3)
    if others is not None:
        result["drain3_cost_us_per_line"] = round(others[1], 1)
    result["incidents"] = len(set(groups))
    if guard_run:
        counts = guard_run_once(system)
        expected = sorted(collections.Counter(groups).values())
        result["guard_run_incidents"] = len(counts)
        result["guard_run_agrees"] = counts == expected
    return result


def _mean(rows: list[dict[str, Any]], label_set: str, key: str) -> float:
    values = [r[label_set][key] for r in rows if label_set in r]
    return round(sum(values) / len(values), 3) if values else 0.0


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    public = [r for r in rows if r["system"] in _PUBLIC]
    daemons = [r for r in rows if r["system"] in _DAEMONS]
    samples = [r for r in rows if r["system"] not in _DAEMONS]
    out: dict[str, Any] = {}
    for name, chosen, label_set in (
        ("loghub_original", public, "original"),
        ("loghub_corrected", public, "corrected"),
        ("all_systems", samples, "original"),  # Loghub and Guard's four samples
        ("daemons", daemons, "original"),
    ):
        if chosen:
            out[name] = {
                k: _mean(chosen, label_set, k)
                for k in (
                    "accuracy",
                    "incidents_per_event",
                    "masking_alone_accuracy",
                    "masking_alone_incidents_per_event",
                    "drain3_accuracy",
                )
                if any(k in r.get(label_set, {}) for r in chosen)
            }
    out["cost_us_per_line"] = round(sum(r["cost_us_per_line"] for r in rows) / len(rows), 1)
    return out


_PUBLIC: set[str] = set()
_DAEMONS: set[str] = set()


def run(
    only: Sequence[str] = (), *, guard_run: bool = True, drain3: bool = False
) -> dict[str, Any]:
    systems = [s for s in load_systems() if not only or s.name in only]
    _PUBLIC.update(s.name for s in systems if s.public)
    _DAEMONS.update(s.name for s in systems if s.daemon)
    rows = [measure(s, guard_run=guard_run, drain3=drain3) for s in systems]
    return {"systems": rows, "mean": summary(rows)}


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{'system':<13} {'lines':>5} {'format':<8} {'events':>6} {'incid.':>6} "
        f"{'accuracy':>8} {'inc/evt':>7}   {'masking alone: acc':>18} {'inc/evt':>7}"
        f"  {'us/line':>7}  guard run"
    ]
    for r in report["systems"]:
        o = r["original"]
        agree = (
            "-"
            if "guard_run_agrees" not in r
            else f"{r['guard_run_incidents']} incidents, "
            f"{'agrees' if r['guard_run_agrees'] else 'DIFFERS'}"
        )
        lines.append(
            f"{r['system']:<13} {r['lines']:>5} {r['format']:<8} {o['events']:>6} "
            f"{r['incidents']:>6} {o['accuracy']:>8.3f} {o['incidents_per_event']:>7}"
            f"   {o['masking_alone_accuracy']:>18.3f} "
            f"{o['masking_alone_incidents_per_event']:>7}  "
            f"{r['cost_us_per_line']:>7}  {agree}"
        )
    for name, m in report["mean"].items():
        if isinstance(m, dict):
            alone = m["masking_alone_accuracy"]
            drain3 = f"; drain3 {m['drain3_accuracy']:.3f}" if "drain3_accuracy" in m else ""
            lines.append(
                f"mean {name:<17} accuracy {m['accuracy']:.3f}, incidents/event "
                f"{m['incidents_per_event']}; masking alone {alone:.3f}, "
                f"{m['masking_alone_incidents_per_event']}{drain3}"
            )
    lines.append(f"grouping cost: {report['mean']['cost_us_per_line']} us per matched line")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.grouping", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--systems", default="", help="comma-separated names (default: all)")
    parser.add_argument(
        "--no-guard-run",
        action="store_true",
        help="replay only (skip the guard run --once cross-check)",
    )
    parser.add_argument(
        "--compare-drain3",
        action="store_true",
        help="also cluster with drain3 (pip install drain3)",
    )
    parser.add_argument(
        "--declared",
        action="store_true",
        help="declare a format: pattern for BGL, HPC, HealthApp, Proxifier (default: all auto)",
    )
    parser.add_argument(
        "--zone",
        default="",
        help="print the captured PostgreSQL log's times in this zone instead of UTC (-03: "
        "what log_timezone America/Sao_Paulo writes)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    System.declared = args.declared
    System.zone = args.zone
    only = [s for s in args.systems.split(",") if s]
    report = {
        "machine": machine(),
        **run(only, guard_run=not args.no_guard_run, drain3=args.compare_drain3),
    }
    print(json.dumps(report, indent=2) if args.json else table(report))


if __name__ == "__main__":
    main()
