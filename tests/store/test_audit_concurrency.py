"""The audit chain holds when several threads and processes append at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from guard.store import audit
from guard.store.db import open_database

APPEND = """
import sys
from guard.store import audit
from guard.store.db import open_database
db = open_database(sys.argv[1])
for i in range(50):
    with db.session() as s:
        audit.append(s, actor="proc", action="test", subject=str(i))
"""


def test_concurrent_appenders_keep_one_chain(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    db = open_database(url)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(50):
                with db.session() as s:
                    audit.append(s, actor=f"thread-{n}", action="test", subject=str(i))
        except BaseException as exc:
            errors.append(exc)

    procs = [subprocess.Popen([sys.executable, "-c", APPEND, url]) for _ in range(2)]
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(60) for p in procs] == [0, 0]
    assert errors == []
    with db.session() as s:
        assert audit.verify(s) == 6 * 50
