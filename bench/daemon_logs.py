"""Capture the grouping benchmark's daemons group: real daemons' own logs, each driven through
its faults and labelled by construction (``bench.daemon_pg``: PostgreSQL 15;
``bench.daemon_stack``: nginx's error and access logs, Redis, in the stack image built offline;
``bench.daemon_auth``: sshd's auth log through rsyslog and MariaDB, in an image built offline).

Run: ``python -m bench.daemon_logs --write`` (about 6 minutes; needs PostgreSQL's server
packages and Docker) stores them in ``bench/data/daemon-logs.jsonl.gz`` (gzipped JSON lines:
system, line, event), which ``python -m bench.grouping`` reads.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Iterable
from pathlib import Path

from bench import daemon_auth, daemon_pg, daemon_stack

DATA = Path(__file__).resolve().parent / "data" / "daemon-logs.jsonl.gz"


def capture(seed: int = 48) -> dict[str, list[tuple[str, str]]]:
    """Every daemon's labelled lines, by system name."""
    import docker

    from tests.flows.image import ensure_stack_image

    image = ensure_stack_image(docker.from_env())
    return {
        "PostgreSQL 15": daemon_pg.capture(seed),
        **daemon_stack.capture(image, seed),
        **daemon_auth.capture(seed),
    }


def write(systems: dict[str, list[tuple[str, str]]], path: Path = DATA) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for system, lines in systems.items():
            for line, label in lines:
                f.write(json.dumps({"system": system, "line": line, "event": label}) + "\n")


def summary(systems: dict[str, list[tuple[str, str]]]) -> Iterable[str]:
    for system, lines in systems.items():
        yield f"{system}: {len(lines)} lines, {len({label for _, label in lines})} events"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.daemon_logs", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"store the capture in {DATA}")
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    systems = capture(args.seed)
    if args.write:
        write(systems)
    print("\n".join(summary(systems)))


if __name__ == "__main__":
    main()
