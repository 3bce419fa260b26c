"""A skill's files: regular files inside its own folder, of bounded size.

Skills come from a git remote that anyone with push access can change. A symlink there would
point the loader, and the sandbox (which is fed a script's content), at a file of the host; a
huge file would fill memory. So a skill folder holds only directories and regular files: no
symlink or submodule, neither on disk (never followed) nor in git's record of the tree (git runs
with ``core.symlinks=false``, so a link arrives as a small file naming its target, and the
record is what still says it was a link), at most ``MAX_FILES`` files of at most
``MAX_FILE_BYTES`` each and ``MAX_SKILL_BYTES`` in all. ``guard skills sync`` checks the fetched
tree, the loader checks again at every load; a skill that fails is quarantined.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections import defaultdict
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024
MAX_SKILL_BYTES = 1024 * 1024
MAX_FILES = 200
NO_SYMLINKS = ("-c", "core.symlinks=false")  # every git command on the skills repository
_LINK, _SUBMODULE = "120000", "160000"
_OUTSIDE = "a skill's files must be regular files inside the skills repository"


def folder_problems(folder: Path, label: str) -> list[str]:
    """What is wrong with the files under ``folder`` on disk (links are reported, never
    followed)."""
    if folder.is_symlink():
        return [f"{label}: the skill folder is a symlink to {os.readlink(folder)}; {_OUTSIDE}"]
    problems: list[str] = []
    count = total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            mode = path.lstat()
            where = f"{label}/{path.relative_to(folder)}"
            if stat.S_ISLNK(mode.st_mode):
                problems.append(f"{where}: a symlink to {os.readlink(path)}; {_OUTSIDE}")
            elif stat.S_ISREG(mode.st_mode):
                count, total = count + 1, total + mode.st_size
                if mode.st_size > MAX_FILE_BYTES:
                    problems.append(f"{where}: {mode.st_size} bytes, over {MAX_FILE_BYTES}")
            elif not stat.S_ISDIR(mode.st_mode):
                problems.append(f"{where}: not a regular file; {_OUTSIDE}")
    if count > MAX_FILES:
        problems.append(f"{label}: {count} files, over {MAX_FILES}")
    if total > MAX_SKILL_BYTES:
        problems.append(f"{label}: {total} bytes in all, over {MAX_SKILL_BYTES}")
    return problems


def recorded_problems(listing: str, label: str) -> dict[str, list[str]]:
    """Problems per top-level folder in git's record of a tree: ``ls-tree -r -l -z`` lines
    (``mode type object size<TAB>path``) or ``ls-files -s -z`` lines (``mode object
    stage<TAB>path``, no size)."""
    found: dict[str, list[str]] = defaultdict(list)
    sizes: dict[str, int] = defaultdict(int)
    for record in filter(None, listing.split("\0")):
        meta, _, path = record.partition("\t")
        fields = meta.split()
        top, where = path.split("/")[0], f"{label}/{path}"
        if top.startswith(".") or not fields:
            continue
        if fields[0] == _LINK:
            found[top].append(f"{where}: a symlink in git; {_OUTSIDE}")
        elif fields[0] == _SUBMODULE:
            found[top].append(f"{where}: a git submodule; {_OUTSIDE}")
        elif len(fields) == 4 and fields[3].isdigit():
            size = int(fields[3])
            sizes[top] += size
            if size > MAX_FILE_BYTES:
                found[top].append(f"{where}: {size} bytes, over {MAX_FILE_BYTES}")
    for top, total in sizes.items():
        if total > MAX_SKILL_BYTES:
            found[top].append(f"{label}/{top}: {total} bytes in all, over {MAX_SKILL_BYTES}")
    return dict(found)


def index_problems(root: Path, label: str) -> dict[str, list[str]]:
    """Problems per skill folder in the git index of ``root`` (none if it is not a clone)."""
    if not (root / ".git").exists():
        return {}
    try:
        proc = subprocess.run(
            ["git", *NO_SYMLINKS, "ls-files", "-s", "-z"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):  # no git here: the disk check still holds
        return {}
    return recorded_problems(proc.stdout, label) if proc.returncode == 0 else {}
