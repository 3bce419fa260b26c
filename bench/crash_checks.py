"""What the crash matrix's scenarios share: Guard's configuration for a case (the local Bot
API server, optionally PostgreSQL), the watched web service's playbook, a learned skill, and
the checks run after the restart (``lost/stuck``, ``skills``, ``telegram``, ``posts``,
``audit``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from bench.crash_run import Check, Run
from tests.helpers.telegram import ADMIN, CHAT, TOKEN


def telegram_config(run: Run, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "http_host": "127.0.0.1",
        "http_port": 0,
        "telegram": {
            "bot_token": TOKEN,
            "chat_id": CHAT,
            "allowed_user_ids": [ADMIN],
            "api_base_url": run.tg.url,
            "poll_timeout": "1s",
            "group_wait": "0s",
        },
        "sandbox": {"backend": "local"},
        "agent": {"verify_timeout": "5s", "poll_interval": "200ms"},
        "skills": {"git_author": "Guard Crash <guard@crash>"},
        "triage": {"flap_window": "1s"},
    }
    if run.database_url:
        # A restarted Guard is a new replica: it leads once the killed one's lease runs out
        # (10 s, not 15, to save time; at 3 s, renewed each second, a start that holds the
        # event loop for 2 s on this busy machine lapses the term and Guard exits 3).
        config |= {"database_url": run.database_url, "ha": {"lease_ttl": "10s"}}
    for key, value in extra.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


def web_playbook(run: Run, auto_resolve: bool = False) -> None:
    run.home.playbook(
        "web",
        [
            {
                "id": "web",
                "type": "http",
                "url": f"{run.service.base}/healthz",
                "every": "1s",
                "auto_resolve": auto_resolve,
            }
        ],
    )


def write_learned_skill(run: Run) -> None:
    """A skill learned earlier (trusted): POST /fix when the web check fails."""
    folder = run.home.root / "skills" / "learned-web-fix"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: learned-web-fix\ndescription: Calls the service's fix endpoint when its "
        "health check answers an error status.\nlicense: Apache-2.0\n---\n\n# learned-web-fix"
        "\n\n## When to use\n\nThe web check fails.\n\n## Procedure\n\n1. POST /fix.\n\n"
        "## Pitfalls\n\nNone.\n\n## Verification\n\nThe check passes.\n"
    )
    (folder / "skill.yaml").write_text(
        "triggers:\n  - source: http\n    kind: http_status\nsteps:\n"
        f'  - action: http.request\n    args: {{url: "{run.service.base}/fix"}}\n'
        "  - verify: {timeout: 10s, interval: 300ms}\n"  # a loaded CI passes it in time
        "limits: {max_runs: 3, window: 1h}\ntrust: trusted\norigin: learned\n"
    )


def audit_check(run: Run) -> Check:
    proc = run.home.cli("audit", "verify", check=False)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()[:200]


def telegram_check(run: Run) -> Check:
    """No text posted twice: a resend after a crash must edit, not post again."""
    texts = [
        m.get("text") or m.get("caption", "")
        for m in sorted(run.tg.bot_messages(), key=lambda m: m["message_id"])
        if "photo" not in m
    ]
    doubled = sorted({t for t in texts if texts.count(t) > 1})
    if doubled:
        return False, f"posted twice: {doubled[0][:80]!r}"
    return True, f"{len(texts)} message(s), none twice"


def stuck_check(run: Run, expected: int, final: set[str]) -> Check:
    incs = [i for i in run.incidents() if i["kind"] != "storm"]
    if len(incs) != expected:
        return False, f"{len(incs)} incident(s), expected {expected}"
    bad = [f"#{i['id']} {i['state']}" for i in incs if i["state"] not in final]
    runs = run.db("select id from remediation_run where status = 'running'")
    cmds = run.db("select id from human_command where status in ('queued', 'running')")
    if bad or runs or cmds:
        return False, f"stuck: {bad} runs {runs} commands {cmds}"
    return True, ", ".join(f"#{i['id']} {i['state']}" for i in incs)


def skills_check(run: Run, learned: int) -> Check:
    root = run.home.root / "skills"
    found = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    if len(found) != learned:
        return False, f"skills: {found}, expected {learned}"
    git = ["git", "-C", str(root)]
    status = subprocess.run([*git, "status", "--porcelain", "--ignored"], capture_output=True)
    if status.returncode != 0 or status.stdout.strip():
        return False, f"repo not clean: {status.stdout.decode()[:120]!r}"
    log = subprocess.run([*git, "log", "--format=%s"], capture_output=True, text=True)
    commits = [ln for ln in log.stdout.splitlines() if "learn skill" in ln]
    if len(commits) != learned:
        return False, f"{len(commits)} learn commit(s), expected {learned}"
    return True, f"{found}, clean, {len(commits)} commit(s)"


def outbox_rows(run: Run, channel: str) -> list[dict[str, Any]]:
    """The channel's outbox rows, oldest first (``buttons`` decoded on SQLite)."""
    rows = run.db(
        "select id, method, chat_id, role, text, buttons, status from outbox "
        f"where channel = '{channel}' order by id"
    )
    keys = ("id", "method", "chat_id", "role", "text", "buttons", "status")
    found = [dict(zip(keys, r, strict=True)) for r in rows]
    for row in found:
        if isinstance(row["buttons"], str):
            row["buttons"] = json.loads(row["buttons"])
    return found


def posts_check(run: Run, channel: str, received: Callable[[dict[str, Any]], int]) -> Check:
    """Every post of the channel's outbox was sent, and the server received it exactly once
    (``received(row)``: how many posts of that row's content the server took)."""
    rows = outbox_rows(run, channel)
    unsent = [f"#{r['id']} {r['role']} {r['status']}" for r in rows if r["status"] != "sent"]
    posts = [r for r in rows if r["method"] in ("send", "photo")]
    counts = [(r, received(r)) for r in posts]
    wrong = [f"#{r['id']} {r['role']} received {n} time(s)" for r, n in counts if n != 1]
    if unsent or wrong or not posts:
        return False, "; ".join(unsent + wrong) or "no post"
    edits = len(rows) - len(posts)
    return True, f"{len(posts)} post(s) each received once, {edits} edit(s)"
