"""The web console's server time at 1,000 and 100,000 incidents (issue 29).

Builds the SQLite store of ``bench.store`` (95 % resolved, 10 timeline rows an incident) at
each size, signs in with a viewer token, and times the overview (``/``) and the newest open
incident's page (``/incidents/{id}``) as the console serves them: the Starlette app called
in process through ASGI (no socket, no browser), so the figure is the server's time: reading
the token, the gate, the store's queries and the rendering. Median and 95th percentile of
``--requests`` each, after two warm-up requests. Goal: the overview at 100,000 incidents in
≤ 300 ms. Run alone: ``python -m bench.web [--sizes 1000,100000] [--requests 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import machine
from bench.store import build, store_home


class _Runtime:
    def __init__(self, settings: Any, db: Any) -> None:
        self.settings, self.db = settings, db

    def health(self) -> list[dict[str, Any]]:
        return [
            {"id": f"mon-{i}", "type": "http", "healthy": True, "last_check": None}
            for i in range(500)
        ]


async def _time(client: Any, path: str, headers: dict[str, str], requests: int) -> dict[str, float]:
    for _ in range(2):
        assert (await client.get(path, headers=headers)).status_code == 200
    took = []
    for _ in range(requests):
        t = time.perf_counter()
        r = await client.get(path, headers=headers)
        took.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200, r.text[:300]
    took.sort()
    return {
        "median_ms": round(statistics.median(took), 1),
        "p95_ms": round(took[int(len(took) * 0.95) - 1], 1),
        "bytes": len(r.content),
    }


def run_size(incidents: int, requests: int) -> dict[str, Any]:
    import httpx
    from sqlmodel import col, select
    from starlette.applications import Starlette

    from guard.access.roles import Role
    from guard.access.tokens import create_token
    from guard.notify.running_gate import gate_from_settings
    from guard.store.models import Incident
    from guard.web.console import Console, routes
    from guard.web.console.signin import StoreTokens

    with tempfile.TemporaryDirectory(prefix="guard-bench-web-") as tmp:
        _, settings, db = store_home(Path(tmp))
        build(db, incidents, 10)
        token = create_token(db, "bench", Role.viewer)
        with db.session() as s:
            newest_open = s.exec(
                select(Incident.id)
                .where(Incident.state == "open")
                .order_by(col(Incident.id).desc())
                .limit(1)
            ).first()
        console = Console(_Runtime(settings, db), gate_from_settings(settings, db), StoreTokens(db))
        app = Starlette(routes=routes(console))
        headers = {"Authorization": f"Bearer {token}"}

        async def measure() -> dict[str, Any]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as c:
                return {
                    "overview": await _time(c, "/", headers, requests),
                    "incident": await _time(c, f"/incidents/{newest_open}", headers, requests),
                }

        found = asyncio.run(measure())
        db.dispose()
    return {"incidents": incidents, **found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = [run_size(n, args.requests) for n in sizes]
    print(
        json.dumps(
            {"machine": machine(), "load_average": os.getloadavg(), "web": results}, indent=2
        )
    )


if __name__ == "__main__":
    main()
