"""Semantic memory in its helper process: answers, persists, leaves when idle, survives crashes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from guard.memory.process import MemoryProcess, MemoryUnavailable


def incident(id_: int, message: str, kind: str = "container_exited") -> SimpleNamespace:
    return SimpleNamespace(
        id=id_, title=f"{kind} on api", message=message, source="docker", kind=kind, target="api"
    )


def wait_gone(pid: int, within: float = 30.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie until its parent reaps it: that counts as gone
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(") ", 1)[1].startswith("Z"):
                return True
        time.sleep(0.05)
    return False


@pytest.fixture
def memory(tmp_path: Path):
    m = MemoryProcess(tmp_path / "memory.lance", idle_timeout=300)
    yield m
    m.close()


def test_remembers_and_recalls_across_a_restart(tmp_path: Path, memory: MemoryProcess) -> None:
    assert memory.search("anything") == []  # no table yet
    assert memory.pid is None  # nothing to find: no helper (its import costs seconds of CPU)
    memory.remember(
        incident(1, "container api exited with code 137"),
        resolution="restarted",
        skill="restart-api",
    )
    memory.remember(incident(2, "disk /dev/sda1 is full", kind="disk_full"), resolution="rotated")
    hits = memory.search("the api container died with code 137")
    assert hits[0].incident_id == 1 and hits[0].skill == "restart-api"
    assert hits[0].resolution == "restarted" and 0.5 < hits[0].score <= 1.0
    memory.close()
    assert memory.pid is None
    again = MemoryProcess(tmp_path / "memory.lance")
    try:
        assert again.search("api container crashed")[0].incident_id == 1
    finally:
        again.close()


def test_remember_replaces_an_incidents_row(memory: MemoryProcess) -> None:
    memory.remember(incident(1, "api exited"), resolution="first")
    memory.remember(incident(1, "api exited"), resolution="second")
    hits = memory.search("api exited", limit=5)
    assert [(h.incident_id, h.resolution) for h in hits] == [(1, "second")]


def test_the_helper_leaves_when_idle_and_comes_back(tmp_path: Path) -> None:
    memory = MemoryProcess(tmp_path / "memory.lance", idle_timeout=0.5)
    try:
        memory.remember(incident(1, "api exited"), resolution="restarted")
        first = memory.pid
        assert first is not None
        assert wait_gone(first)
        assert memory.search("api exited")[0].resolution == "restarted"
        assert memory.pid not in (None, first)
    finally:
        memory.close()


def test_a_crashed_helper_costs_one_call_at_most(memory: MemoryProcess) -> None:
    memory.remember(incident(1, "api exited"), resolution="restarted")
    pid = memory.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert memory.search("api exited")[0].incident_id == 1  # sent again to a new helper
    assert memory.pid not in (None, pid)


def test_a_hung_helper_is_killed_and_reported(tmp_path: Path) -> None:
    # starting a helper (importing LanceDB) may take seconds on a busy machine: only the
    # hung call gets the short timeout
    memory = MemoryProcess(tmp_path / "memory.lance", answer_timeout=60, cooldown=0)
    try:
        memory.remember(incident(1, "warm it up"), resolution="restarted")
        pid = memory.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        memory.answer_timeout = 2
        with pytest.raises(MemoryUnavailable, match="did not answer in 2s"):
            memory.search("api exited")
        memory.answer_timeout = 60
        assert wait_gone(pid)
        assert memory.search("api exited")[0].incident_id == 1  # a new helper answers
    finally:
        memory.close()


def test_guard_itself_never_loads_lancedb(tmp_path: Path) -> None:
    """The point of the helper: LanceDB and pyarrow stay out of the appliance's memory."""
    code = (
        "import sys\n"
        "from types import SimpleNamespace as N\n"
        "from guard.config import Settings\n"
        "from guard.memory import open_memory\n"
        f"m = open_memory(Settings(data_dir={str(tmp_path)!r}))\n"
        "m.remember(N(id=1, title='t', message='api exited', source='docker', kind='k',"
        " target='api'), resolution='restarted')\n"
        "assert m.search('api exited')[0].incident_id == 1\n"
        "m.close()\n"
        "print(sorted(x for x in ('lancedb', 'pyarrow') if x in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_helper_that_cannot_start_is_not_restarted_for_every_recall(tmp_path: Path) -> None:
    memory = MemoryProcess(tmp_path / "memory.lance", cooldown=300)
    memory.command = (sys.executable, "-c", "import sys; sys.exit(3)")  # dies before answering
    try:
        with pytest.raises(MemoryUnavailable, match=r"exited \(3\) before answering"):
            memory.remember(incident(1, "api exited"), resolution="restarted")
        memory.command = MemoryProcess.command  # it would work now, but the pause holds
        with pytest.raises(MemoryUnavailable, match="not retried for"):
            memory.remember(incident(1, "api exited"), resolution="restarted")
        assert memory.pid is None  # no helper was started during the pause
        memory.cooldown, memory._down_until = 0, 0.0  # the pause is over
        memory.remember(incident(1, "api exited"), resolution="restarted")
        assert memory.search("api exited")[0].incident_id == 1
    finally:
        memory.close()


def test_a_failed_request_does_not_pause_the_helper(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("")
    memory = MemoryProcess(tmp_path / "not-a-folder" / "memory.lance")
    try:
        for _ in range(2):  # LanceDB cannot create its folder: each call says so, no pause
            with pytest.raises(MemoryUnavailable) as failed:
                memory.remember(incident(1, "api exited"), resolution="restarted")
            assert "not retried" not in str(failed.value)
        assert memory.pid is not None  # the same helper answered both
    finally:
        memory.close()


def test_warm_starts_the_helper_with_lancedb_loaded(tmp_path: Path) -> None:
    """``guard run`` warms the helper in the background, so the first recall does not wait."""
    first = MemoryProcess(tmp_path / "memory.lance")
    first.remember(incident(1, "api exited with code 137"), resolution="restarted")
    first.close()
    memory = MemoryProcess(tmp_path / "memory.lance")  # a restart of Guard
    try:
        assert memory.pid is None
        memory.warm()
        pid = memory.pid
        assert pid is not None
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "_lancedb" in maps  # LanceDB's native library is loaded before any recall
        assert memory.search("api exited")[0].incident_id == 1
        assert memory.pid == pid  # the warm helper answered
    finally:
        memory.close()


def test_warm_with_nothing_remembered_starts_no_helper(memory: MemoryProcess) -> None:
    memory.warm()
    assert memory.pid is None  # an appliance with no past incidents stays small


def _python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.strip()


def test_lancedb_is_imported_without_the_rest_namespace_client_and_works(tmp_path: Path) -> None:
    """The helper's LanceDB import skips the REST client's API classes (half its CPU)."""
    code = (
        "import sys\n"
        "from types import SimpleNamespace as N\n"
        "from guard.memory.semantic import SemanticMemory\n"
        f"m = SemanticMemory(__import__('pathlib').Path({str(tmp_path / 'memory.lance')!r}))\n"
        "m.remember(N(id=7, title='t', message='api exited', source='docker', kind='k',"
        " target='api'), resolution='restarted')\n"
        "print(m.search('api exited')[0].incident_id,"
        " 'lance_namespace_urllib3_client.api' in sys.modules)\n"
    )
    assert _python(code) == "7 False"


def test_lancedb_is_imported_the_ordinary_way_when_the_stub_does_not_do(tmp_path: Path) -> None:
    code = (
        "import sys, types\n"
        "from guard.memory import lance_import\n"
        "def broken():\n"  # a package with no __path__: its submodules cannot import
        "    sys.modules[lance_import.REST_CLIENT] = types.ModuleType('x')\n"
        "    return True\n"
        "lance_import._stub_rest_client = broken\n"
        "lancedb = lance_import.import_lancedb()\n"
        f"db = lancedb.connect({str(tmp_path / 'db')!r})\n"
        "import pyarrow as pa\n"
        "t = db.create_table('t', schema=pa.schema([pa.field('id', pa.int64())]))\n"
        "t.add([{'id': 1}])\n"
        "print(t.count_rows(), 'lance_namespace_urllib3_client.api' in sys.modules)\n"
    )
    assert _python(code) == "1 True"  # the native module kept: it cannot be loaded twice
