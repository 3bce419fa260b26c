#!/usr/bin/python3
"""guard-exec: the host's own limit on what Guard may run over SSH (docs/HOSTS.md).

Installed as /usr/local/bin/guard-exec and named by Guard's authorized_keys line
(``restrict,command="/usr/local/bin/guard-exec /etc/guard/allowlist"``), so sshd runs it
instead of whatever Guard sends. It splits ``$SSH_ORIGINAL_COMMAND`` into words without a shell
and runs them only if they match a line of the allowlist, a file owned by root that nobody else
may write. A line is words; in a line, ``{int}`` matches digits, ``{since}`` a journalctl time,
``{cursor}`` a journal cursor, ``{glob:/var/log/app/*.log}`` an absolute path matched part by
part. Anything else is refused (exit 126) and logged to syslog. ``@allowlist`` prints the list.
Python 3 standard library only; read it all before you install it.
"""

import fnmatch
import os
import re
import shlex
import sys
import syslog

ALLOWLIST = "/etc/guard/allowlist"

WORDS = {
    "{int}": re.compile(r"[0-9]{1,7}"),
    "{since}": re.compile(r"(?!--)[0-9A-Za-z:. +-]{1,40}"),
    "{cursor}": re.compile(r"[A-Za-z0-9=;_-]{1,400}"),
}


def word_matches(pattern: str, word: str) -> bool:
    if pattern.startswith("{glob:") and pattern.endswith("}"):
        glob, parts = pattern[6:-1].split("/"), word.split("/")
        return (
            word.startswith("/")
            and len(glob) == len(parts)
            and ".." not in parts
            and all(
                p and fnmatch.fnmatchcase(p, g) for p, g in zip(parts[1:], glob[1:], strict=True)
            )
        )
    rule = WORDS.get(pattern)
    return rule.fullmatch(word) is not None if rule else word == pattern


def allowed(lines: list[list[str]], argv: list[str]) -> bool:
    return any(
        len(line) == len(argv) and all(map(word_matches, line, argv)) for line in lines if line
    )


def read_allowlist(path: str) -> list[list[str]]:
    info = os.stat(path)
    if info.st_uid != 0 or info.st_mode & 0o022:
        raise PermissionError(f"{path} must be owned by root and writable by root alone")
    with open(path) as f:
        return [shlex.split(line, comments=True) for line in f]


def refuse(why: str) -> int:
    syslog.syslog(syslog.LOG_WARNING, f"guard-exec refused: {why}")
    print(f"guard-exec: refused: {why}", file=sys.stderr)
    return 126


def main(args: list[str]) -> int:
    path = args[1] if len(args) > 1 else ALLOWLIST
    command = os.environ.get("SSH_ORIGINAL_COMMAND", "")
    try:
        lines = read_allowlist(path)
        argv = shlex.split(command)
    except (OSError, ValueError) as exc:
        return refuse(f"{command[:200]!r}: {exc}")
    if argv == ["@allowlist"]:
        print("\n".join(shlex.join(line) for line in lines if line))
        return 0
    if not argv or not allowed(lines, argv):
        return refuse(f"{command[:200]!r} is not on the allowlist {path}")
    syslog.syslog(syslog.LOG_INFO, f"guard-exec runs: {shlex.join(argv)[:200]}")
    os.execv(argv[0], argv)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
