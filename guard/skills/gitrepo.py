"""Run git on the skills repository, with the remote's token given per command, never stored.

The token reaches git as an ``http.<origin>.extraHeader`` (sent to the remote's host only, not
to one a redirect points at) through ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n`` environment
variables (git >= 2.31): it is not written to ``.git/config`` and not in argv (``ps`` shows
argv). ``LOCK`` serialises the commands that move the working tree or its index within one
Guard (a learned commit and a sync's fast-forward); git's own lock files guard across processes.
Whatever git prints is redacted of the token (and of the header's base64 form) before Guard
shows or logs it. Prompts are off: a missing credential fails, never hangs. Every command runs
with ``core.symlinks=false``: a link committed to the remote is checked out as a small file
naming its target, never as a link to a host path (``guard.skills.files``).
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlsplit

from guard.config import basic_credentials
from guard.domain.exceptions import SkillsRemoteError
from guard.redact import redact
from guard.skills.files import NO_SYMLINKS

LOCK = threading.Lock()


class Git:
    """``git`` in ``root``, authenticated by ``token`` for the http(s) remote ``remote``."""

    def __init__(
        self,
        root: Path,
        token: str | None = None,
        author: str = "Guard <guard@localhost>",
        remote: str = "",
    ) -> None:
        self.root = root.resolve()
        self.token = token
        parts = urlsplit(remote)
        self.origin = f"{parts.scheme}://{parts.netloc}/" if parts.scheme.startswith("http") else ""
        name = author.split("<")[0].strip() or "Guard"
        email = author.split("<")[-1].rstrip(">").strip() if "<" in author else "guard@localhost"
        self.ident = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **self.ident}
        env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        for key in [
            k for k in env if k.startswith("GIT_CONFIG_KEY_") or k.startswith("GIT_CONFIG_VALUE_")
        ]:
            del env[key]
        env["GIT_CONFIG_COUNT"] = "0"
        if self.token and self.origin:
            env["GIT_CONFIG_COUNT"] = "1"
            env["GIT_CONFIG_KEY_0"] = f"http.{self.origin}.extraHeader"
            env["GIT_CONFIG_VALUE_0"] = f"Authorization: Basic {basic_credentials(self.token)}"
        return {**env, **(extra or {})}

    def clean(self, text: str) -> str:
        """``text`` with the token in any form replaced, then the process-wide redaction."""
        if self.token:
            for secret in (self.token, basic_credentials(self.token)):
                text = text.replace(secret, "[REDACTED:git-token]")
        return redact(text)

    def run(
        self,
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``git ARGS``; raise ``SkillsRemoteError`` (redacted) when it fails and ``check``."""
        try:
            proc = subprocess.run(
                ["git", *NO_SYMLINKS, *args],
                cwd=cwd or self.root,
                env=self.env(env),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SkillsRemoteError(
                f"git {' '.join(args[:2])} took over {timeout:g}s (is the remote reachable?)"
            ) from None
        proc = subprocess.CompletedProcess(
            proc.args, proc.returncode, self.clean(proc.stdout), self.clean(proc.stderr)
        )
        if check and proc.returncode != 0:
            text = proc.stderr.strip() or proc.stdout.strip()
            hint = ""
            if any(
                s in text
                for s in ("could not read Username", "Authentication failed", "401", "403")
            ):
                hint = (
                    " (the remote refused the credentials: set skills.git_token, e.g. "
                    "GUARD_SKILLS__GIT_TOKEN, to a token that may read and push)"
                )
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            raise SkillsRemoteError(
                f"git {' '.join(args[:2])} failed: " + " / ".join(lines[:5]) + hint
            )
        return proc

    def out(self, *args: str, env: dict[str, str] | None = None) -> str:
        return self.run(*args, env=env).stdout.strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def rev(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None."""
        proc = self.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
        return proc.stdout.strip() or None

    def commit_beside(self, source: Path, ref: str, message: str) -> str:
        """Commit ``source`` (a folder outside the tracked tree) as ``<its name>/`` on top of
        HEAD, replacing what HEAD has there, to the new branch ``ref``; the working tree and HEAD
        are untouched. Never moves an existing ``ref`` (that would lose its commit)."""
        index = Path(self.out("rev-parse", "--absolute-git-dir")) / "guard-learn.index"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            head = self.rev("HEAD")
            self.run("read-tree", *([head] if head else ["--empty"]), env=env)
            self.run("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", source.name, env=env)
            self.run(
                "--work-tree", str(source.parent.resolve()), "add", "-f", "--", source.name, env=env
            )
            tree = self.out("write-tree", env=env)
            commit = self.out("commit-tree", tree, *(["-p", head] if head else []), "-m", message)
            self.run("update-ref", ref, commit, "")
            return commit
        finally:
            index.unlink(missing_ok=True)
