"""The store at size: 100,000 incidents and 1,000,000 timeline rows, read by the CLI.

Builds a SQLite store (Guard's default) with 100,000 incidents opened over 180 days (95 %
resolved, a few escalated) and 10 timeline rows each, then times, as a user runs them (a
``guard`` subprocess, wall time, median of 5), ``guard incidents list``, ``guard incidents list
--state open``, ``guard report daily --print`` and ``guard store stats``; and ``guard --version``,
which is the part of every command that is Python starting and importing, not the store. The
same queries are timed in-process too (``incidents list``'s query and ``daily.gather``), with
and without the indexes this issue added (dropped for the side-by-side, then re-created).
Run alone: ``python -m bench.store [--incidents 100000] [--per-incident 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import insert, text

from bench.common import REPO, machine

STATES = ["resolved"] * 95 + ["open", "escalated", "awaiting_human", "muted", "open"]


def build(db: Any, incidents: int, per_incident: int) -> None:
    from guard.store.models import Incident, IncidentTimeline

    rng = random.Random(17)
    now = datetime.now(UTC)
    chunk = 10_000
    for start in range(0, incidents, chunk):
        rows, timeline = [], []
        for i in range(start + 1, min(start + chunk, incidents) + 1):
            opened = now - timedelta(seconds=rng.uniform(0, 180 * 86400))
            state = rng.choice(STATES)
            resolved = opened + timedelta(seconds=rng.uniform(10, 7200))
            rows.append(
                {
                    "id": i,
                    "fingerprint": f"{i:016x}",
                    "check_key": f"mon-{i % 500}|t",
                    "monitor_id": f"mon-{i % 500}",
                    "source": "http",
                    "target": f"http://svc-{i % 300}/healthz",
                    "kind": "http_status",
                    "severity": "critical",
                    "title": f"http status on svc-{i % 300}",
                    "message": "answered 503 (expected 200)",
                    "state": state,
                    "count": rng.randrange(1, 500),
                    "reopen_count": 0,
                    "flapping": False,
                    "opened_at": opened,
                    "first_seen": opened,
                    "last_seen": opened,
                    "resolved_at": resolved if state == "resolved" else None,
                    "details": {},
                }
            )
            for k in range(per_incident):
                to = "escalated" if state == "escalated" and k == 2 else None
                timeline.append(
                    {
                        "incident_id": i,
                        "at": opened + timedelta(seconds=k * 30),
                        "type": "state_changed" if to else "count",
                        "from_state": "open" if to else None,
                        "to_state": to,
                        "message": "seen again",
                        "data": {},
                    }
                )
        with db.engine.begin() as conn:
            conn.execute(insert(Incident), rows)
            conn.execute(insert(IncidentTimeline), timeline)


def _cli(env: dict[str, str], *args: str, runs: int = 5) -> dict[str, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "guard.cli", *args],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - t)
    return {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3)}


def _in_process(db: Any, settings: Any) -> dict[str, float]:
    from sqlmodel import col, select

    from guard.reports import daily
    from guard.store.models import Incident

    def best(fn: Any) -> float:
        times = []
        for _ in range(5):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return round(min(times) * 1000, 1)

    def listing(states: list[str] | None) -> None:
        with db.session() as s:
            q = select(Incident).order_by(col(Incident.id).desc()).limit(200)
            if states:
                q = q.where(col(Incident.state).in_(states))
            s.exec(q).all()

    return {
        "incidents_list_query_ms": best(lambda: listing(None)),
        "incidents_list_state_open_query_ms": best(lambda: listing(["open"])),
        "report_daily_gather_ms": best(lambda: daily.gather(db, settings)),
    }


def store_home(root: Path) -> tuple[Path, Any, Any]:
    """A Guard home in ``root`` (config, empty playbooks): its config file, settings and store."""
    from guard.config import load_settings
    from guard.store.db import open_database

    (root / "playbooks").mkdir()
    config = root / "guard.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(root / "data"),
                "playbooks_dir": str(root / "playbooks"),
                "skills_dir": str(root / "skills"),
            }
        )
    )
    settings = load_settings(config)
    return config, settings, open_database(settings.database_url)


def run(incidents: int = 100_000, per_incident: int = 10) -> dict[str, Any]:
    from guard.store.models import LATER_INDEXES

    with tempfile.TemporaryDirectory(prefix="guard-bench-store-") as tmp:
        root = Path(tmp)
        config, settings, db = store_home(root)
        t = time.perf_counter()
        build(db, incidents, per_incident)
        built_s = time.perf_counter() - t
        env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
        env.update(GUARD_CONFIG=str(config), PYTHONPATH=str(REPO))
        cli = {
            "guard --version (start-up alone)": _cli(env, "--version"),
            "guard incidents list": _cli(env, "incidents", "list"),
            "guard incidents list --state open": _cli(env, "incidents", "list", "--state", "open"),
            "guard report daily --print": _cli(env, "report", "daily", "--print"),
            "guard store stats": _cli(env, "store", "stats", runs=3),
        }
        with_indexes = _in_process(db, settings)
        with db.engine.begin() as conn:
            for name in LATER_INDEXES:
                conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
        without = _in_process(db, settings)
        size = sum(f.stat().st_size for f in (root / "data").glob("guard.db*"))
        db.dispose()
    return {
        "what": f"{incidents:,} incidents and {incidents * per_incident:,} timeline rows "
        "in SQLite; CLI wall time as a user runs it",
        "build_s": round(built_s, 1),
        "db_mb": round(size / 1e6, 1),
        "load_average": os.getloadavg(),
        "cli": cli,
        "in_process_with_indexes": with_indexes,
        "in_process_without_the_new_indexes": without,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=100_000)
    parser.add_argument("--per-incident", type=int, default=10)
    args = parser.parse_args()
    print(
        json.dumps(
            {"machine": machine(), "store": run(args.incidents, args.per_incident)}, indent=2
        )
    )


if __name__ == "__main__":
    main()
