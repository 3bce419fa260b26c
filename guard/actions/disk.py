"""``disk.usage`` and ``disk.truncate``: what fills a watched mount, and freeing it by
truncating its large log files.

Both work only on the mount their incident is about: a ``type: resources`` monitor's
``disk_high`` or ``inodes_high`` on ``host: local`` names it as its target (``local:/data``),
so a reply or a skill cannot point Guard at ``/etc``. The walk stays on that filesystem,
follows no symbolic link and stops after ``MAX_ENTRIES`` entries. Truncating keeps the file
(its inode, owner and the writer's open descriptor: a writer that appends goes on at the new
end) and sets its size to 0. ``disk.truncate`` is approval-only, like ``docker.exec``.
"""

from __future__ import annotations

import asyncio
import fnmatch
import heapq
import os
import re
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from guard.actions.base import Action, ActionContext, ActionError, ActionResult

MAX_ENTRIES = 100_000  # entries looked at per call
TOP = 10  # files and folders shown
MAX_TRUNCATED = 100  # files truncated per call
KINDS = ("disk_high", "inodes_high")
SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$", re.IGNORECASE)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def _bytes(text: Any) -> int:
    found = SIZE.match(str(text).strip())
    if found is None:
        raise ActionError(f"disk.truncate: min_size={text!r}: write a size such as 10m or 500k")
    power = " kmgt".index(found.group(2).lower() or " ")
    return int(float(found.group(1)) * 1024**power)


def mount_of(name: str, args: Mapping[str, Any], ctx: ActionContext) -> str:
    """The mount ``args`` name, if it is the one the incident is about; else a refusal."""
    asked = str(args.get("path") or "").removeprefix("local:").rstrip("/") or "/"
    incident = ctx.incident or {}
    target = str(incident.get("target") or "")
    if (
        incident.get("source") != "resources"
        or incident.get("kind") not in KINDS
        or target != f"local:{asked}"
    ):
        raise ActionError(
            f"{name} refuses {asked}: it acts only on the mount of its incident (a type: "
            f"resources monitor's {' or '.join(KINDS)} on host: local, target local:PATH); "
            f"this incident's target is {target or 'none'}"
        )
    if not os.path.isdir(asked):
        raise ActionError(f"{name}: {asked} is not a folder here (is it mounted into Guard?)")
    return asked


def _walk(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """Every regular file under ``root`` on its filesystem, no link followed, bounded."""
    device = os.lstat(root).st_dev
    pending, seen = [root], 0
    while pending and seen < MAX_ENTRIES:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_dev == device:
                pending.append(entry.path)
            elif stat.S_ISREG(info.st_mode):
                yield entry.path, info


def _used(root: str) -> str:
    fs = os.statvfs(root)
    size, free = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    used = size - fs.f_bfree * fs.f_frsize
    share = 100 * used / size if size else 0
    return f"{root}: {_human(used)} of {_human(size)} used ({share:.0f} %), {_human(free)} free"


class Usage:
    name = "disk.usage"
    description = "the largest files and folders under the mount of a disk_high incident"
    params = ("path",)

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        root = mount_of(self.name, args, ctx)
        return await asyncio.to_thread(self._look, root)

    def _look(self, root: str) -> ActionResult:
        files: list[tuple[int, str]] = []
        folders: dict[str, int] = {}
        for path, info in _walk(root):
            space = info.st_blocks * 512
            files.append((space, path))
            head = os.path.relpath(path, root).split(os.sep, 1)
            key = head[0] + ("/" if len(head) > 1 else "")
            folders[key] = folders.get(key, 0) + space
        top = heapq.nlargest(TOP, files)
        big = heapq.nlargest(TOP, ((n, k) for k, n in folders.items()))
        lines = [_used(root), "largest files:"]
        lines += [f"  {_human(n):>10}  {p}" for n, p in top] or ["  (none)"]
        lines += ["by entry at the top:"]
        lines += [f"  {_human(n):>10}  {os.path.join(root, k)}" for n, k in big] or ["  (none)"]
        details = {"files": [{"path": p, "bytes": n} for n, p in top]}
        return ActionResult(True, "\n".join(lines), details)


class Truncate:
    name = "disk.truncate"
    description = "truncate to 0 the large files matching a pattern under a disk_high mount"
    params = ("path", "match", "min_size")
    approval_only = True

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        root = mount_of(self.name, args, ctx)
        pattern = str(args.get("match") or "*.log")
        if "/" in pattern:
            raise ActionError("disk.truncate: match= is a file name pattern (*.log), not a path")
        least = _bytes(args.get("min_size") or "1m")
        return await asyncio.to_thread(self._truncate, root, pattern, least)

    def _truncate(self, root: str, pattern: str, least: int) -> ActionResult:
        chosen = [
            (path, info.st_size)
            for path, info in _walk(root)
            if fnmatch.fnmatch(os.path.basename(path), pattern) and info.st_size >= least
        ][:MAX_TRUNCATED]
        if not chosen:
            said = f"no {pattern} of {_human(least)} or more under {root}"
            return ActionResult(False, f"disk.truncate: nothing to truncate: {said}")
        done: list[dict[str, Any]] = []
        for path, size in chosen:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)
            done.append({"path": path, "bytes": size})
        freed = sum(d["bytes"] for d in done)
        said = ", ".join(f"{d['path']} ({_human(d['bytes'])})" for d in done)
        message = f"truncated {len(done)} file(s), {_human(freed)}: {said}\n{_used(root)}"
        return ActionResult(True, message, {"truncated": done})


ACTIONS: list[Action] = [Usage(), Truncate()]
