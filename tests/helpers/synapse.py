"""A real Matrix homeserver for the tests: Synapse from PyPI (``scripts/bootstrap`` installs it
into ``.venv/tools/synapse``, its pins its own), on 127.0.0.1 with SQLite, registration by
shared secret (the admin register API, with its HMAC) and rate limits relaxed for tests.

One server per test session (``synapse`` fixture in tests/matrix/conftest.py): it takes a few
seconds to start. Tests that need it skip, saying why, when it is not installed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from tests.helpers.agent import free_port

REPO = Path(__file__).resolve().parents[2]
SYNAPSE = REPO / ".venv" / "tools" / "synapse" / "bin" / "python"
SERVER_NAME = "guard.test"
LOOSE = {"per_second": 1000, "burst_count": 1000}


def missing() -> str | None:
    """Why the homeserver cannot run here (None: it can)."""
    if not SYNAPSE.exists():
        return f"Synapse is not installed ({SYNAPSE} missing): run scripts/bootstrap"
    return None


def config(root: Path, port: int, shared_secret: str) -> dict[str, Any]:
    """A homeserver.yaml for one local test server."""
    return {
        "server_name": SERVER_NAME,
        "pid_file": str(root / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(root / "homeserver.db")}},
        "media_store_path": str(root / "media"),
        "signing_key_path": str(root / "signing.key"),
        "registration_shared_secret": shared_secret,
        "macaroon_secret_key": secrets.token_hex(16),
        "form_secret": secrets.token_hex(16),
        "report_stats": False,
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "enable_metrics": False,
        "presence": {"enabled": False},
        "url_preview_enabled": False,
        "rc_message": LOOSE,
        "rc_registration": LOOSE,
        "rc_joins": {"local": LOOSE, "remote": LOOSE},
        "rc_invites": {"per_room": LOOSE, "per_user": LOOSE, "per_issuer": LOOSE},
        "rc_login": {"address": LOOSE, "account": LOOSE, "failed_attempts": LOOSE},
        "rc_admin_redaction": LOOSE,
        "rc_joins_per_room": LOOSE,
    }


@dataclass
class User:
    user_id: str
    access_token: str


class Homeserver:
    """A running Synapse: its URL, registering users, and a small client for the tests."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.shared_secret = secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, within: float = 90) -> Homeserver:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / "homeserver.yaml"
        path.write_text(yaml.safe_dump(config(self.root, self.port, self.shared_secret)))
        argv = [str(SYNAPSE), "-m", "synapse.app.homeserver", "-c", str(path)]
        log = (self.root / "synapse.log").open("wb")
        subprocess.run([*argv, "--generate-keys"], check=True, stdout=log, stderr=log)
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Synapse exited: see {self.root / 'synapse.log'}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"Synapse did not answer within {within:g}s: see synapse.log")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def register(self, name: str, admin: bool = False) -> User:
        """A user registered by shared secret (``/_synapse/admin/v1/register``, its HMAC)."""
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        nonce = httpx.get(endpoint, timeout=10).json()["nonce"]
        password = secrets.token_hex(8)
        body = {
            "nonce": nonce,
            "username": name,
            "password": password,
            "admin": admin,
            "mac": _mac(self.shared_secret, nonce, name, password, admin),
        }
        got = httpx.post(endpoint, json=body, timeout=30)
        got.raise_for_status()
        data = got.json()
        return User(data["user_id"], data["access_token"])

    def call(
        self, user: User, method: str, path: str, body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One client-server API call as ``user``."""
        got = httpx.request(
            method,
            f"{self.url}/_matrix/client/v3{path}",
            json=body,
            headers={"Authorization": f"Bearer {user.access_token}"},
            timeout=30,
        )
        got.raise_for_status()
        return dict(got.json())

    def room(self, owner: User, *invited: User) -> str:
        """A private room ``owner`` creates, inviting ``invited``; its id."""
        body = {"preset": "private_chat", "invite": [u.user_id for u in invited]}
        return str(self.call(owner, "POST", "/createRoom", body)["room_id"])

    def join(self, user: User, room_id: str) -> None:
        self.call(user, "POST", f"/join/{quote(room_id)}", {})

    def send(self, user: User, room_id: str, content: dict[str, Any], kind: str = "") -> str:
        """An event ``user`` sends (``m.room.message`` unless ``kind``); its id."""
        txn = secrets.token_hex(8)
        path = f"/rooms/{quote(room_id)}/send/{kind or 'm.room.message'}/{txn}"
        return str(self.call(user, "PUT", path, content)["event_id"])

    def react(self, user: User, room_id: str, event_id: str, key: str) -> str:
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
        return self.send(user, room_id, content, "m.reaction")

    def messages(self, user: User, room_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The room's latest events, oldest first."""
        path = f"/rooms/{quote(room_id)}/messages?dir=b&limit={limit}"
        return list(reversed(self.call(user, "GET", path)["chunk"]))


def _mac(secret: str, nonce: str, name: str, password: str, admin: bool) -> str:
    """The register API's HMAC-SHA1 of nonce, user, password and admin flag, NUL-separated."""
    mac = hmac.new(secret.encode(), digestmod=hashlib.sha1)
    mac.update(b"\x00".join(p.encode() for p in (nonce, name, password)))
    mac.update(b"\x00" + (b"admin" if admin else b"notadmin"))
    return mac.hexdigest()
