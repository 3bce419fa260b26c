"""Git remotes for tests: bare repositories on disk, served over HTTP by git's own
``git http-backend`` (CGI) behind a small threaded server that may demand a token.

``GitServer.url(name)`` is the https-style remote Guard is given; every request's headers are
kept (``requests``) so a test can check what Guard sent.
"""

from __future__ import annotations

import base64
import os
import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.fakes.local_http import serve, stop


def git(*args: str, cwd: Path) -> str:
    """Run git as a person would (their own identity), failing loudly."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Rita Reviewer",
        "GIT_AUTHOR_EMAIL": "rita@acme",
        "GIT_COMMITTER_NAME": "Rita Reviewer",
        "GIT_COMMITTER_EMAIL": "rita@acme",
        "GIT_TERMINAL_PROMPT": "0",
    }
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout.strip()


def bare_repo(root: Path, name: str = "acme/skills.git") -> Path:
    """A bare repository with one commit on main (a README), like a new repo on a forge."""
    bare = root / name
    bare.mkdir(parents=True)
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=root)
    git("config", "http.receivepack", "true", cwd=bare)
    seed = root / f"seed-{bare.name}"
    git("clone", "-q", str(bare), str(seed), cwd=root)
    (seed / "README.md").write_text("# Guard's skills\n")
    git("add", ".", cwd=seed)
    git("commit", "-q", "-m", "Start the skills repository", cwd=seed)
    git("push", "-q", "origin", "HEAD:main", cwd=seed)
    return bare


def reviewer_clone(bare: Path, where: Path) -> Path:
    git("clone", "-q", str(bare), str(where), cwd=bare.parent)
    return where


class GitServer:
    """``git http-backend`` for every repository under ``root``, on 127.0.0.1."""

    def __init__(self, root: Path, token: str | None = None) -> None:
        self.root = root
        self.token = token
        self.requests: list[dict[str, Any]] = []
        self.refused = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.handle(self)

            def do_POST(self) -> None:
                outer.handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.base = serve(Handler)

    def url(self, name: str = "acme/skills.git") -> str:
        return f"{self.base}/{name}"

    def _allowed(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        _, _, password = base64.b64decode(header[6:]).decode().partition(":")
        return password == self.token

    def handle(self, req: BaseHTTPRequestHandler) -> None:
        self.requests.append({"path": req.path, "headers": dict(req.headers)})
        if not self._allowed(req.headers.get("Authorization")):
            self.refused += 1
            req.send_response(401)
            req.send_header("WWW-Authenticate", 'Basic realm="git"')
            req.send_header("Content-Length", "0")
            req.end_headers()
            return
        path, _, query = req.path.partition("?")
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": req.command,
            "CONTENT_TYPE": req.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "guard",
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": req.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": req.headers.get("Content-Encoding", ""),
        }
        proc = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        req.send_response(status)
        for key, value in headers:
            req.send_header(key, value)
        req.send_header("Content-Length", str(len(payload)))
        req.end_headers()
        req.wfile.write(payload)

    def close(self) -> None:
        stop(self.server)
