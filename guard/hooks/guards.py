"""What a hook checks before it reads an alert: the credential, the rate, and what it tells.

- ``authentic``: the bearer token and/or the HMAC signature (hex sha256 of the raw body, or of
  ``<timestamp>:<body>`` with ``hmac_timestamp_header``, as Grafana signs; an optional
  ``sha256=`` prefix), compared in constant time. Every credential is checked before the rate,
  so a request that fails authentication never spends (or reads) the source's budget.
- ``RateLimit``: a token bucket of alerts per source (``rate``, ``burst``). An authenticated
  request is let in while the bucket holds a token, then charged one per alert it carries (the
  bucket may go into debt: one large group still passes, and what follows waits for the
  refill); past that a request gets 429.
- ``Refusals``: a refused credential is logged and audited at most once per ``EVERY`` seconds
  per source, with how many were refused since, so a flood of bad tokens is neither a flood of
  log lines nor of audit rows. The credential itself is never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from loguru import logger

from guard.config.intake import IntakeSource, parse_rate

EVERY = 60.0  # seconds between log lines (and audit entries) about one source's refusals


def authentic(source: IntakeSource, headers: Mapping[str, str], body: bytes | None) -> bool:
    """Whether the request carries the source's credential(s). ``body`` None: not read yet
    (only the bearer token is checked then; an HMAC source is checked again with the body)."""
    if source.token is not None:
        given = headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        expected = source.token.get_secret_value().encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), expected
        ):
            return False
    if source.hmac_secret is not None and body is not None:
        key = source.hmac_secret.get_secret_value().encode()
        if source.hmac_timestamp_header is not None:
            body = (
                headers.get(source.hmac_timestamp_header.lower(), "").strip().encode() + b":" + body
            )
        expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(given_signature(source, headers).encode(), expected):
            return False
    return True


def given_signature(source: IntakeSource, headers: Mapping[str, str]) -> str:
    """The request's signature as hex (``sha256=`` dropped); empty without ``hmac_header``."""
    if source.hmac_header is None:
        return ""
    return headers.get(source.hmac_header.lower(), "").strip().lower().removeprefix("sha256=")


@dataclass
class RateLimit:
    """A token bucket: ``rate`` alerts per second, up to ``burst`` at once, with debt."""

    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    _tokens: float = field(default=0.0)
    _at: float = 0.0
    _started: bool = False

    @classmethod
    def of(cls, source: IntakeSource) -> RateLimit:
        return cls(parse_rate(source.rate), source.burst)

    def allow(self) -> bool:
        """Whether a request may come in (it is charged one alert now)."""
        now = self.clock()
        if not self._started:
            self._tokens, self._started = float(self.burst), True
        else:
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def charge(self, alerts: int) -> None:
        """Charge the alerts a request let in carried beyond the first."""
        self._tokens -= max(alerts - 1, 0)


@dataclass
class Refusals:
    """Refused credentials of one source, told at most once per ``every`` seconds."""

    source_id: str
    every: float = EVERY
    clock: Callable[[], float] = time.monotonic
    refused: int = 0  # since last told
    _told_at: float | None = None

    def refuse(self, peer: str) -> dict[str, object] | None:
        """Count one refusal; the audit entry's data when it is time to tell (else None)."""
        self.refused += 1
        now = self.clock()
        if self._told_at is not None and now - self._told_at < self.every:
            return None
        self._told_at = now
        told = {"source": self.source_id, "refused": self.refused, "last_peer": peer}
        logger.warning(
            "intake {}: refused {} request(s) with a wrong or missing credential (last from {}); "
            "the next are counted and told in {:g}s",
            self.source_id,
            self.refused,
            peer,
            self.every,
        )
        self.refused = 0
        return told
