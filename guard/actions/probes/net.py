"""The network probes: ``probe.http``, ``probe.tcp``, ``probe.dns`` and ``probe.tls``.

``probe.http`` follows no redirect (a ``Location`` could name a host no grant names): it reports
the status and where it points. ``probe.tls`` shakes hands twice: once verifying (the chain
against the system's CA bundle and the host name), once not, to read the certificate it would
have refused (an expired one's dates are the evidence).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import certifi
import httpx

from guard.actions.base import ActionError
from guard.actions.probes.reach import Call, Finding, Probe, Reach, hang_up, lookup, split_target

BODY_EXCERPT = 1000  # characters of a response body shown
BODY_BYTES = 16384  # bytes of it read at most: a body of gigabytes costs Guard nothing


def trusted(reach: Reach) -> ssl.SSLContext:
    """A verifying context: the public CAs (certifi) and ``probes.ca_file``'s, if any."""
    context = ssl.create_default_context(cafile=certifi.where())
    if reach.settings.ca_file is not None:
        try:
            context.load_verify_locations(cafile=str(reach.settings.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ActionError(
                f"probes.ca_file {reach.settings.ca_file}: not a readable PEM bundle ({exc})"
            ) from None
    return context


def _ms(since: float) -> float:
    return round((time.monotonic() - since) * 1000, 1)


async def _first_bytes(resp: httpx.Response, most: int) -> bytes:
    """The body's first ``most`` bytes; the rest is never read."""
    got = b""
    async for chunk in resp.aiter_bytes():
        got += chunk
        if len(got) >= most:
            break
    return got[:most]


class Http(Probe):
    name = "probe.http"
    description = (
        "read-only HTTP request: status (ok when it is expect_status, default any 2xx), "
        "timing and a body excerpt; no redirect followed"
    )
    params = ("url", "method")

    def reaches(self, args: Mapping[str, Any], reach: Reach) -> list[tuple[str, int | None]]:
        parts = urlsplit(str(args.get("url") or ""))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ActionError(f"probe.http needs url=http(s)://host/...; got {args.get('url')!r}")
        return [(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))]

    async def look(self, call: Call) -> Finding:
        url = call.arg("url")
        [(host, port)] = self.reaches(call.args, call.reach)
        assert port is not None
        method = str(call.args.get("method") or "GET").upper()
        if method not in ("GET", "HEAD", "OPTIONS"):
            raise ActionError(f"probe.http is read-only: method GET, HEAD or OPTIONS, not {method}")
        address = await call.reach.resolve(self.name, host, port, call.budget)
        parts = urlsplit(url)
        # to the address checked, not to a second lookup: the name goes as Host and as SNI
        netloc = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        pinned = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        named = {"sni_hostname": host} if parts.scheme == "https" else {}
        expect = call.args.get("expect_status")
        started = time.monotonic()
        try:
            async with (
                httpx.AsyncClient(
                    timeout=call.budget, follow_redirects=False, verify=trusted(call.reach)
                ) as client,
                client.stream(
                    method,
                    pinned,
                    headers={"Host": parts.netloc.rsplit("@", 1)[-1]},
                    extensions=named,
                ) as resp,
            ):
                ms = _ms(started)
                head = await _first_bytes(resp, BODY_BYTES)
        except httpx.HTTPError as exc:
            why = str(exc) or type(exc).__name__
            return Finding(False, f"{method} {url} failed after {_ms(started)} ms: {why}", {})
        ok = resp.status_code == int(expect) if expect else resp.is_success
        text = head.decode(resp.encoding or "utf-8", errors="replace")
        body = text[:BODY_EXCERPT]
        size = int(resp.headers.get("content-length") or len(head))
        lines = [
            f"{method} {url} -> {resp.status_code} {resp.reason_phrase} in {ms} ms"
            + (f" (expected {expect})" if expect else "")
        ]
        if resp.is_redirect:
            lines.append(f"location: {resp.headers.get('location', '')} (not followed)")
        if body:
            lines.append(f"body: {body}" + (" ..." if len(text) > BODY_EXCERPT else ""))
        return Finding(
            ok,
            "\n".join(lines),
            {"status": resp.status_code, "ms": ms, "body": body, "bytes": size},
        )


class Tcp(Probe):
    name = "probe.tcp"
    description = "connect to host:port; ok when it accepts, with the connect time"
    params = ("target",)

    async def look(self, call: Call) -> Finding:
        host, port = split_target(self.name, call.arg("target"), None)
        address = await call.reach.resolve(self.name, host, port, call.budget)
        started = time.monotonic()
        try:
            _, writer = await asyncio.open_connection(address, port)
        except OSError as exc:
            why = exc.strerror or str(exc)
            return Finding(False, f"{host}:{port} ({address}) refused: {why}", {"connected": False})
        ms = _ms(started)
        await hang_up(writer)
        return Finding(
            True,
            f"{host}:{port} ({address}) accepts connections: connected in {ms} ms",
            {"connected": True, "ms": ms, "address": address},
        )


class Dns(Probe):
    name = "probe.dns"
    description = "resolve a name Guard's resolver sees; ok when it has addresses"
    params = ("name",)

    def reaches(self, args: Mapping[str, Any], reach: Reach) -> list[tuple[str, int | None]]:
        return [(str(args.get("name") or "").strip().lower().rstrip("."), None)]

    async def look(self, call: Call) -> Finding:
        name = call.arg("name").strip().lower().rstrip(".")
        if not name:
            raise ActionError("probe.dns needs a name, e.g. probe.dns db.internal")
        call.reach.check(self.name, name, None)
        started = time.monotonic()
        try:
            addresses = await lookup(name, 0, call.budget)
        except ActionError as exc:
            return Finding(False, f"{exc} (after {_ms(started)} ms)", {"addresses": []})
        ms = _ms(started)
        return Finding(
            True,
            f"{name} resolves to {', '.join(addresses)} in {ms} ms",
            {"addresses": addresses, "ms": ms},
        )


def _x509(der: bytes) -> dict[str, Any]:
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    now = dt.datetime.now(dt.UTC)
    left = cert.not_valid_after_utc - now
    return {
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "not_before": cert.not_valid_before_utc.isoformat(),
        "not_after": cert.not_valid_after_utc.isoformat(),
        "days_left": left.days,
        "expired": left.total_seconds() < 0,
        "self_signed": cert.subject == cert.issuer,
    }


async def _handshake(
    address: str, port: int, host: str, context: ssl.SSLContext
) -> ssl.SSLObject | None:
    _, writer = await asyncio.open_connection(
        address, port, ssl=context, server_hostname=host, ssl_handshake_timeout=None
    )
    try:
        found = writer.get_extra_info("ssl_object")
        return found if isinstance(found, ssl.SSLObject) else None
    finally:
        await hang_up(writer)


class Tls(Probe):
    name = "probe.tls"
    description = (
        "TLS handshake with host[:port] (default 443): certificate expiry in days, subject, "
        "issuer, chain verification and host name match"
    )
    params = ("target",)
    default_port = 443

    async def look(self, call: Call) -> Finding:
        host, port = split_target(self.name, call.arg("target"), 443)
        address = await call.reach.resolve(self.name, host, port, call.budget)
        verified = trusted(call.reach)
        verdict = "verified (chain and host name)"
        ok = True
        try:
            await _handshake(address, port, host, verified)
        except ssl.SSLCertVerificationError as exc:
            ok, verdict = False, f"NOT verified: {exc.verify_message or exc.reason}"
        except (OSError, ssl.SSLError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            return Finding(False, f"{host}:{port} TLS handshake failed: {why}", {})
        loose = ssl.create_default_context()
        loose.check_hostname = False
        loose.verify_mode = ssl.CERT_NONE
        try:
            tls = await _handshake(address, port, host, loose)
            der = tls.getpeercert(binary_form=True) if tls is not None else None
        except (OSError, ssl.SSLError) as exc:
            return Finding(False, f"{host}:{port} TLS handshake failed: {exc}", {})
        if not der:
            return Finding(False, f"{host}:{port} sent no certificate", {"verified": ok})
        cert = _x509(der)
        left = cert["days_left"]
        when = f"EXPIRED {-left} day(s) ago" if cert["expired"] else f"expires in {left} day(s)"
        text = (
            f"{host}:{port} certificate {when} (not after {cert['not_after']})\n"
            f"subject: {cert['subject']}\nissuer: {cert['issuer']}"
            + (" (self-signed)" if cert["self_signed"] else "")
            + f"\nchain: {verdict}"
        )
        return Finding(ok and not cert["expired"], text, {**cert, "verified": ok})


ACTIONS = [Http(), Tcp(), Dns(), Tls()]
