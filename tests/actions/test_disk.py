"""disk.usage and disk.truncate on real files: the largest files and folders of a mount, and
its large logs truncated in place (the writer's descriptor still appends); each refuses a path
that is not its incident's mount, and neither follows a link out of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from guard.actions import ActionContext, ActionRegistry
from guard.actions.base import ActionError
from guard.config import Settings

pytestmark = pytest.mark.unit

MiB = 2**20


def context(mount: Path, kind: str = "disk_high") -> ActionContext:
    incident = {"source": "resources", "kind": kind, "target": f"local:{mount}"}
    return ActionContext(Settings(), incident)


def fill(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))


async def run(text: str, ctx: ActionContext) -> Any:
    action, args = ActionRegistry().parse(text)
    return await action.run(args, ctx)


async def test_usage_names_the_largest_files_and_folders(tmp_path: Path) -> None:
    fill(tmp_path / "logs" / "app.log", 3 * MiB)
    fill(tmp_path / "logs" / "old.log", MiB // 2)
    fill(tmp_path / "uploads" / "a.bin", MiB)
    (tmp_path / "outside").symlink_to("/usr")  # never followed
    found = await run(f"disk.usage local:{tmp_path}", context(tmp_path))
    assert found.ok
    lines = found.message.splitlines()
    assert lines[0].startswith(f"{tmp_path}: ") and " used (" in lines[0]
    assert lines[1:4] == [
        "largest files:",
        f"     3.0 MiB  {tmp_path}/logs/app.log",
        f"     1.0 MiB  {tmp_path}/uploads/a.bin",
    ]
    assert f"     3.5 MiB  {tmp_path}/logs/" in found.message
    assert "/usr" not in found.message


async def test_truncate_empties_large_logs_and_the_writer_goes_on(tmp_path: Path) -> None:
    fill(tmp_path / "logs" / "app.log", 2 * MiB)
    fill(tmp_path / "logs" / "small.log", 1000)
    fill(tmp_path / "data.db", 2 * MiB)
    with open(tmp_path / "logs" / "app.log", "a") as writer:  # noqa: ASYNC230 (held open)
        done = await run(f"disk.truncate local:{tmp_path}", context(tmp_path))
        writer.write("after\n")
    assert done.ok, done.message
    assert done.message.startswith(f"truncated 1 file(s), 2.0 MiB: {tmp_path}/logs/app.log")
    assert (tmp_path / "logs" / "app.log").read_text() == "after\n"
    assert (tmp_path / "logs" / "small.log").stat().st_size == 1000  # under min_size
    assert (tmp_path / "data.db").stat().st_size == 2 * MiB  # not a *.log
    again = await run(f"disk.truncate local:{tmp_path} min_size=500k", context(tmp_path))
    assert not again.ok and "nothing to truncate: no *.log of 500.0 KiB or more" in again.message


async def test_each_refuses_a_path_that_is_not_its_incident_s_mount(tmp_path: Path) -> None:
    for text in ("disk.truncate /etc", "disk.usage /etc", f"disk.truncate {tmp_path}/logs"):
        with pytest.raises(ActionError, match="acts only on the mount of its incident"):
            await run(text, context(tmp_path))
    with pytest.raises(ActionError, match=f"this incident's target is local:{tmp_path}"):
        await run(f"disk.truncate {tmp_path} ", context(tmp_path, kind="memory_high"))
    with pytest.raises(ActionError, match="target is none"):
        await run(f"disk.usage {tmp_path}", ActionContext(Settings()))
    with pytest.raises(ActionError, match="match= is a file name pattern"):
        await run(f"disk.truncate {tmp_path} match=../*", context(tmp_path))
    with pytest.raises(ActionError, match="write a size such as 10m"):
        await run(f"disk.truncate {tmp_path} min_size=lots", context(tmp_path))
