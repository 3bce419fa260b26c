"""Real journal files, written by systemd's own ``systemd-journal-remote`` from the journal
export format (fields ``NAME=value`` a line, or ``NAME``, a 64-bit little-endian length and the
bytes for binary values; a blank line ends an entry), and read by the real ``journalctl``."""

from __future__ import annotations

import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

BOOT = "0123456789abcdef0123456789abcdef"
REMOTE_PATHS = ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")


def journal_remote() -> str:
    found = next((p for p in REMOTE_PATHS if Path(p).exists()), None)
    if found is None or shutil.which("journalctl") is None:
        pytest.fail("journal tests need systemd: apt-get install systemd systemd-journal-remote")
    return found


def _field(name: str, value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    if b"\n" in raw or isinstance(value, bytes):
        return name.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
    return f"{name}={value}\n".encode()


class Journal:
    """A journal directory; ``write`` appends entries with a real journal writer."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._remote = journal_remote()
        self._clock = time.time_ns() // 1000
        self._mono = 1_000_000

    def entry(
        self,
        message: str | bytes,
        *,
        unit: str | None = "api.service",
        priority: int = 6,
        ident: str | None = None,
        **extra: str,
    ) -> bytes:
        """One entry in the export format, stamped now (and after the previous one)."""
        self._clock = max(self._clock + 1, time.time_ns() // 1000)
        self._mono += 1000
        fields = {
            "__REALTIME_TIMESTAMP": str(self._clock),
            "__MONOTONIC_TIMESTAMP": str(self._mono),
            "_BOOT_ID": BOOT,
            "PRIORITY": str(priority),
            "_PID": "4242",
            **extra,
        }
        if unit is not None:
            fields["_SYSTEMD_UNIT"] = unit
        fields["SYSLOG_IDENTIFIER"] = ident or (unit or "app").split(".")[0]
        out = b"".join(_field(k, v) for k, v in fields.items())
        return out + _field("MESSAGE", message) + b"\n"

    def write(self, entries: list[bytes], file: str = "system.journal") -> None:
        """Append the entries to ``file`` (created if new) with systemd-journal-remote."""
        subprocess.run(
            [self._remote, f"--output={self.folder / file}", "-"],
            input=b"".join(entries),
            check=True,
            capture_output=True,
            timeout=120,
        )
