"""Certificate checks (``type: tls``): days left, the chain, the hostname.

One handshake per check, verified against the system's trust store (or ``ca_file``) with the
hostname checked (``server_name``, else ``host``, sent as SNI). When verification fails, a
second, unverified handshake reads the certificate anyway, so the evidence names what was
served. An expired certificate is ``tls_expiring`` with negative days, not a chain error: the
fix is the same renewal. The certificate is parsed with ``cryptography`` (the ``ssl`` module
parses only a certificate it verified).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
from collections.abc import Mapping
from typing import Any

from guard.domain.records import Observation, Signal
from guard.monitors.base import spec_signal
from guard.playbooks.models import TlsMonitorSpec

DAY = 86400.0


class TlsMonitor:
    """One TLS endpoint; every check is one handshake (two when it does not verify)."""

    type = "tls"

    def __init__(self, spec: TlsMonitorSpec) -> None:
        self.spec = spec
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self.name = spec.server_name or spec.host
        self.target = f"{self.name}:{spec.port}"

    async def check(self, state: Mapping[str, Any]) -> Observation:
        return Observation([await asyncio.to_thread(self.look)])

    def look(self) -> Signal:
        """Handshake, read the certificate, judge it."""
        refused: str | None = None
        try:
            der = self._handshake(verify=self.spec.verify)
        except ssl.SSLCertVerificationError as exc:
            refused = exc.verify_message or str(exc)
            try:
                der = self._handshake(verify=False)
            except (OSError, ssl.SSLError) as again:
                return self._unreachable(again)
        except (OSError, ssl.SSLError) as exc:
            return self._unreachable(exc)
        facts = certificate_facts(der)
        left = (facts.pop("not_after_ts") - dt.datetime.now(dt.UTC).timestamp()) / DAY
        facts["days_left"] = round(left, 1)
        said = f"subject {facts['subject']}, issuer {facts['issuer']}"
        if left * DAY <= self.spec.expires_within:
            within = self.spec.expires_within / DAY
            when = f"expires in {left:.0f} days" if left >= 0 else f"expired {-left:.0f} days ago"
            message = (
                f"{self.target} certificate {when} ({facts['not_after']}), "
                f"within {within:g} days: {said}"
            )
            return self._signal("tls_expiring", message, facts)
        if refused is not None:
            facts["verify_error"] = refused
            kind = "tls_hostname_mismatch" if "hostname" in refused.lower() else "tls_untrusted"
            return self._signal(
                kind, f"{self.target} certificate refused: {refused}; {said}", facts
            )
        message = f"{self.target} certificate valid for {left:.0f} more days: {said}"
        return self._signal("tls_ok", message, facts, ok=True)

    def _handshake(self, *, verify: bool) -> bytes:
        if verify:
            ctx = ssl.create_default_context(cafile=self.spec.ca_file)
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        address = (self.spec.host, self.spec.port)
        with (
            socket.create_connection(address, timeout=self.spec.timeout) as raw,
            ctx.wrap_socket(raw, server_hostname=self.name) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        if not der:
            raise ssl.SSLError(f"{self.target} sent no certificate")
        return der

    def _unreachable(self, exc: BaseException) -> Signal:
        reason = str(exc) or type(exc).__name__
        message = f"{self.target}: no TLS handshake: {reason}"
        return self._signal("tls_unreachable", message, {"error": type(exc).__name__})

    def _signal(
        self, kind: str, message: str, details: dict[str, Any], *, ok: bool = False
    ) -> Signal:
        return spec_signal(self.spec, "tls", self.target, kind, message, details, ok=ok)

    async def close(self) -> None:
        return None


def certificate_facts(der: bytes) -> dict[str, Any]:
    """Subject, issuer, names and expiry of a DER certificate (the evidence)."""
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    after = cert.not_valid_after_utc
    facts: dict[str, Any] = {
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "not_after": after.strftime("%Y-%m-%d %H:%M UTC"),
        "not_after_ts": after.timestamp(),
        "serial": format(cert.serial_number, "x"),
    }
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        facts["dns_names"] = names.value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        facts["dns_names"] = []
    return facts
