"""Is a reply a fix? Only when it unambiguously is one; otherwise Guard asks before running it.

People reply to an incident message to talk as well as to fix ("ok, looking at it now - maybe
restart later?"). A reply runs at once only if it is an action that parses
(``docker.restart api``) or a shell command that parses and starts with a command Guard knows
(``curl -X POST http://api/restart``). Anything else gets "Run `...` as a fix? [Run] [Cancel]":
two single-use approvals (``fix_run``, ``fix_cancel``) bound to that message like every other
button, with the text kept server-side under the run approval's id (callback data carries only
the id). A reply the question could not show whole (``commandtext.oddities``) gets no
buttons. ``/fix ID COMMAND`` is explicit and is never asked about.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import re
import secrets
import shlex
from datetime import timedelta
from typing import Any

from guard.actions import ActionError, ActionRegistry
from guard.domain.records import utcnow
from guard.notify.channel import Buttons, Markup
from guard.store.db import Database
from guard.store.models import Approval
from guard.store.state import get_state, put_state
from guard.util.commandtext import oddities

# The sandbox image's tools plus the shell's and coreutils' everyday commands.
KNOWN_COMMANDS = frozenset(
    {
        "sh",
        "bash",
        "curl",
        "wget",
        "jq",
        "dig",
        "nslookup",
        "nc",
        "ps",
        "python3",
        "psql",
        "redis-cli",
        "echo",
        "printf",
        "kill",
        "sleep",
        "test",
        "true",
        "false",
        "cat",
        "grep",
        "sed",
        "awk",
        "ls",
        "rm",
        "mv",
        "cp",
        "mkdir",
        "touch",
        "chmod",
        "chown",
        "ln",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "tee",
        "xargs",
        "find",
        "env",
        "timeout",
        "date",
        "id",
        "whoami",
        "hostname",
        "uname",
        "df",
        "du",
        "free",
        "ping",
        "ip",
        "ss",
        "netstat",
        "host",
        "openssl",
        "docker",
        "kubectl",
        "systemctl",
        "service",
        "supervisorctl",
        "pg_isready",
        "mysql",
        "mysqladmin",
        "mongosh",
        "nginx",
    }
)
_COMMAND_NAME = re.compile(r"(?:\.{0,2}/)?[A-Za-z0-9_./-]+")


def _key(channel: str, approval_id: str) -> str:
    return f"{channel}:confirm:{approval_id}"


def unambiguous(text: str, actions: ActionRegistry, limit: int) -> bool:
    """Whether ``text`` is plainly a fix: an action that parses, or a known command that does.

    Longer than a message of the channel can be (``limit``): never (and not parsed: ``shlex``
    is pure Python). It may import an action family's client: call it off the event loop."""
    if len(text) > limit:
        return False
    if actions.looks_like_action(text):
        try:
            actions.parse(text)
        except (ActionError, ValueError):
            return False
        return True
    try:
        words = shlex.split(text)
    except ValueError:  # an open quote: not a command
        return False
    if not words or not _COMMAND_NAME.fullmatch(words[0]):
        return False
    name = words[0]
    return name in KNOWN_COMMANDS or name.startswith(("/", "./"))


def ask(
    db: Database,
    markup: Markup,
    channel: str,
    *,
    incident_id: int,
    fix: str,
    user_id: int | str,
    ttl: float,
) -> tuple[str, Buttons]:
    """Queue nothing; return the question's text and its Run/Cancel buttons (no buttons for a
    text the question cannot show whole: a tap never runs what the message hid)."""
    if odd := oddities(fix, markup.limit - 300):
        return (
            markup.escape(
                f"Guard will not run this reply from a button: {'; '.join(odd)}. "
                f"Send the fix with /fix {incident_id} COMMAND if it is one."
            ),
            [],
        )
    run, cancel = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    expires = utcnow() + timedelta(seconds=ttl)
    with db.session() as session:
        session.add(Approval(id=run, incident_id=incident_id, kind="fix_run", expires_at=expires))
        session.add(
            Approval(id=cancel, incident_id=incident_id, kind="fix_cancel", expires_at=expires)
        )
        put_state(session, _key(channel, run), {"fix": fix, "user": user_id})
    text = markup.cut(
        f"Run {markup.code(fix)} as a fix for incident #{incident_id}? It is not "
        "an action or a command Guard recognises."
    )
    return text, [[("Run", run), ("Cancel", cancel)]]


def pending_fix(db: Database, channel: str, approval_id: str) -> dict[str, Any]:
    """The fix a ``fix_run`` approval stands for (``{}`` if unknown)."""
    with db.session() as session:
        return get_state(session, _key(channel, approval_id))
