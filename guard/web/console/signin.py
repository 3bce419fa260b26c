"""Who is asking the console: a bearer token, a signed session cookie, or a trusted proxy's
header; CSRF tokens for forms; a per-address limit on wrong tokens.

- A session cookie is ``name|issued|nonce`` signed with HMAC-SHA256 under a per-install key
  (``data_dir/web-session.key``, made on first use, mode 0600), good for ``SESSION_AGE``. It
  names the token it was made from; every request asks the token store whether that token is
  still active, so a revoked token's sessions stop at once. Signing out ends the session.
- A form's CSRF token is an HMAC of the session's nonce (of the proxy's user name, for a
  proxy sign-in); a bearer request needs none (a browser never adds that header by itself).
- Wrong tokens: at most ``FAILURES`` a minute per client address (the TCP peer, or a trusted
  proxy's last hop: ``guard.access.proxies``); then 429 with ``Retry-After``, whatever is
  sent, until the window has passed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from guard.access.proxies import Proxies as Proxies  # its home before guard.access
from guard.access.tokens import role_of, verify_token
from guard.store.db import Database

COOKIE = "guard_session"
LOGIN_COOKIE = "guard_login"  # the sign-in form's CSRF nonce, before there is a session
SESSION_AGE = 12 * 3600  # seconds a session lasts
FAILURES = 10  # wrong tokens per client address ...
WINDOW = 60.0  # ... per this many seconds


class Tokens(Protocol):
    """The token store as the console sees it (the wiring layer adapts ``guard.access``)."""

    def verify(self, secret: str) -> str | None:
        """The token's name, or None for a wrong or revoked token (in constant time)."""
        ...

    def active(self, name: str) -> bool:
        """Whether the token ``name`` exists and is not revoked."""
        ...


@dataclass(frozen=True)
class Who:
    """A signed-in token: its name, how it signed in, and the nonce its forms are bound to."""

    name: str
    via: str  # bearer, session, proxy
    nonce: str = ""


def load_key(data_dir: Path) -> bytes:
    """The per-install signing key, made on first use (0600, written atomically)."""
    path = Path(data_dir) / "web-session.key"
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.hex())
    try:
        os.link(tmp, path)  # the first writer wins; a racing one reads the winner's key
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    finally:
        tmp.unlink(missing_ok=True)
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _same(a: str, b: str) -> bool:
    """Constant-time equality of two strings, any characters (``compare_digest`` on ``str``
    refuses non-ASCII, which a forged cookie or form may hold)."""
    return hmac.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


class Signer:
    """Session cookies and CSRF tokens under one key."""

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self.key = key
        self.clock = clock
        self._ended: dict[str, float] = {}  # signed-out sessions' nonces -> when they expire

    def end(self, who: Who) -> None:
        """Sign a session out: its cookie is refused from now on, even if replayed (until this
        process restarts; it expires by itself within ``SESSION_AGE``)."""
        now = self.clock()
        for nonce, until in list(self._ended.items()):
            if until < now:
                del self._ended[nonce]
        if who.nonce and len(self._ended) < 100_000:
            self._ended[who.nonce] = now + SESSION_AGE

    def _mac(self, purpose: str, value: str) -> str:
        return _b64(hmac.new(self.key, f"{purpose}|{value}".encode(), hashlib.sha256).digest())

    def session(self, name: str) -> str:
        payload = _b64(f"{name}|{int(self.clock())}|{secrets.token_urlsafe(16)}".encode())
        return f"{payload}.{self._mac('session', payload)}"

    def read(self, cookie: str) -> Who | None:
        """The session a cookie holds, if its signature holds and it has not expired."""
        payload, _, mac = cookie.partition(".")
        if not _same(mac, self._mac("session", payload)):
            return None
        try:
            name, issued, nonce = base64.urlsafe_b64decode(payload + "==").decode().split("|")
            age = self.clock() - int(issued)
        except ValueError:
            return None
        if not 0 <= age <= SESSION_AGE or nonce in self._ended:
            return None
        return Who(name, "session", nonce)

    def csrf(self, bound: str) -> str:
        """The CSRF token of forms bound to ``bound`` (a session's nonce, a login nonce)."""
        return self._mac("csrf", bound)

    def csrf_ok(self, bound: str, given: str) -> bool:
        return bool(bound) and _same(self.csrf(bound), given)


class Limiter:
    """Wrong tokens per client address, in a sliding window."""

    def __init__(
        self,
        limit: int = FAILURES,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self._seen: dict[str, deque[float]] = {}

    def _recent(self, address: str) -> deque[float]:
        seen = self._seen.setdefault(address, deque())
        now = self.clock()
        while seen and now - seen[0] >= self.window:
            seen.popleft()
        if not seen:
            del self._seen[address]
        return seen

    def retry_after(self, address: str) -> int | None:
        """Seconds until ``address`` may try again, or None if it may now."""
        seen = self._recent(address)
        if len(seen) < self.limit:
            return None
        return max(1, int(seen[0] + self.window - self.clock()) + 1)

    def failed(self, address: str) -> None:
        if len(self._seen) > 10_000:  # a flood from many addresses: forget the oldest
            self._seen.pop(next(iter(self._seen)))
        self._seen.setdefault(address, deque()).append(self.clock())


class StoreTokens:
    """``Tokens`` from the store's ``access_token`` table (``guard.access.tokens``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def verify(self, secret: str) -> str | None:
        found = verify_token(self.db, secret)
        return None if found is None else found.name

    def active(self, name: str) -> bool:
        return role_of(self.db, name) is not None
