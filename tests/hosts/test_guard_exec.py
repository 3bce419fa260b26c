"""guard-exec, the host's side: the allowlist decides, words are never given to a shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from guard.hosts import guard_exec
from guard.hosts.guard_exec import allowed, main, read_allowlist

LINES = [
    ["/usr/bin/sudo", "-n", "/usr/bin/systemctl", "--no-pager", "restart", "nginx.service"],
    ["/usr/bin/journalctl", "-u", "nginx.service", "-n", "{int}"],
    ["/usr/bin/truncate", "-s", "0", "{glob:/var/log/app/*.log}"],
]


def _allowlist(tmp_path: Path, text: str, mode: int = 0o644) -> Path:
    path = tmp_path / "allowlist"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.unit
def test_exact_words_and_placeholders() -> None:
    assert allowed(LINES, LINES[0])
    assert allowed(LINES, ["/usr/bin/journalctl", "-u", "nginx.service", "-n", "200"])
    assert allowed(LINES, ["/usr/bin/truncate", "-s", "0", "/var/log/app/api.log"])
    refused = [
        ["/usr/bin/sudo", "-n", "/usr/bin/systemctl", "--no-pager", "stop", "ssh.service"],
        ["bash", "-c", "id"],
        ["/usr/bin/journalctl", "-u", "nginx.service", "-n", "200; id"],
        ["/usr/bin/journalctl", "-u", "nginx.service", "-n", "--follow"],
        ["/usr/bin/truncate", "-s", "0", "/etc/passwd"],
        ["/usr/bin/truncate", "-s", "0", "/var/log/app/../../../etc/x.log"],
        ["/usr/bin/truncate", "-s", "0", "/var/log/app/sub/deeper.log"],
        [*LINES[0], "extra"],
        [],
    ]
    for argv in refused:
        assert not allowed(LINES, argv), argv


@pytest.mark.unit
def test_refusals_exit_126_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _allowlist(tmp_path, "/usr/bin/df -P -h\n")
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", "bash -c id")
    assert main(["guard-exec", str(path)]) == 126
    assert "refused: 'bash -c id' is not on the allowlist" in capsys.readouterr().err
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", "/usr/bin/df -P -h 'unclosed")
    assert main(["guard-exec", str(path)]) == 126  # shlex refuses; nothing half-parsed runs
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", "@allowlist")
    assert main(["guard-exec", str(path)]) == 0
    assert capsys.readouterr().out == "/usr/bin/df -P -h\n"


@pytest.mark.unit
def test_an_allowlist_others_may_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _allowlist(tmp_path, "/usr/bin/df -P -h\n", 0o666)
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", "/usr/bin/df -P -h")
    assert main(["guard-exec", str(path)]) == 126
    assert "must be owned by root and writable by root alone" in capsys.readouterr().err
    if os.geteuid() != 0:
        pytest.skip("ownership by root is checked only where root can own the test's file")
    with pytest.raises(PermissionError):
        read_allowlist(str(path))


def test_an_allowed_command_runs_without_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "ran"
    path = _allowlist(tmp_path, f"/usr/bin/touch {out}\n/usr/bin/echo {{int}}\n")
    if os.stat(path).st_uid != 0:
        pytest.skip("the allowlist must be owned by root")
    script = guard_exec.__file__
    env = {"SSH_ORIGINAL_COMMAND": f"/usr/bin/touch {out}", "PATH": "/usr/bin"}
    done = subprocess.run([sys.executable, script, str(path)], env=env, capture_output=True)
    assert done.returncode == 0 and out.exists()
    env["SSH_ORIGINAL_COMMAND"] = "/usr/bin/echo 12$(id)"
    done = subprocess.run([sys.executable, script, str(path)], env=env, capture_output=True)
    assert done.returncode == 126 and b"refused" in done.stderr
    env["SSH_ORIGINAL_COMMAND"] = "/usr/bin/echo 42"
    done = subprocess.run([sys.executable, script, str(path)], env=env, capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"42\n")
