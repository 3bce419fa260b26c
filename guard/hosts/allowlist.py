"""The exact words Guard sends a host, and the allowlist lines that let them through.

Each host action is one argv here; ``allowlist`` writes the same argv with its variable words as
guard-exec's placeholders, so what Guard sends and what the host allows come from one place.
Programs are named by absolute path (Debian's merged /usr); only ``systemctl`` goes through
sudo, one sudoers line per verb and unit, no wildcards (docs/HOSTS.md).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from guard.config.hosts import HostSettings

SUDO = ["/usr/bin/sudo", "-n"]
SYSTEMCTL = "/usr/bin/systemctl"
JOURNALCTL = "/usr/bin/journalctl"
VERBS = ("restart", "start", "stop", "reload", "status")
DF = ["/usr/bin/df", "-P", "-h"]
FREE = ["/usr/bin/free", "-m"]
PS = ["/usr/bin/ps", "-eo", "pid,user,pcpu,pmem,etime,args", "--sort=-pcpu"]
ALLOWLIST_COMMAND = ["@allowlist"]


def systemctl(verb: str, unit: str) -> list[str]:
    return [*SUDO, SYSTEMCTL, "--no-pager", verb, unit]


def journal(unit: str, lines: int | str, since: str | None = None) -> list[str]:
    argv = [JOURNALCTL, "--no-pager", "-o", "short-iso", "-u", unit, "-n", str(lines)]
    return [*argv, "--since", since] if since else argv


def follow(cursor: str | None, lines: int | str = 0) -> list[str]:
    """The remote journal: every unit, as JSON, resumed after ``cursor`` when there is one."""
    argv = [JOURNALCTL, "--no-pager", "--all", "-o", "json", "-f"]
    return [*argv, "--after-cursor", cursor] if cursor else [*argv, "-n", str(lines)]


def truncate(path: str) -> list[str]:
    return ["/usr/bin/truncate", "-s", "0", path]


def named(host: HostSettings, name: str) -> list[str]:
    return shlex.split(host.commands[name])


def allowlist(host: HostSettings, needed: Iterable[list[str]] = ()) -> list[list[str]]:
    """guard-exec's lines for ``host``: its units' verbs and journals, its paths, its named
    commands, the read-only views, and whatever the playbooks' steps ``needed`` beyond those."""
    lines = [[*SUDO, SYSTEMCTL, "--no-pager", v, u] for u in host.units for v in VERBS]
    for unit in host.units:
        lines.append(journal(unit, "{int}"))
        lines.append(journal(unit, "{int}", "{since}"))
    lines += [follow(None, "{int}"), follow("{cursor}")]
    lines += [truncate("{glob:" + glob + "}") for glob in host.paths]
    lines += [named(host, name) for name in host.commands]
    lines += [DF, FREE, PS]
    for argv in needed:
        if argv not in lines:
            lines.append(argv)
    return lines


def sudoers(host: HostSettings, lines: Iterable[list[str]]) -> str:
    """One exact command per line for every allowlisted argv that starts with sudo."""
    exact = [shlex.join(argv[2:]) for argv in lines if argv[:2] == SUDO]
    body = "".join(f"{host.user} ALL=(root) NOPASSWD: {cmd}\n" for cmd in exact)
    return f"# /etc/sudoers.d/guard: exact commands, no wildcards (guard host setup)\n{body}"
