"""A remote Docker engine over TLS, made of the local one: a loopback TLS endpoint in front of
``/var/run/docker.sock`` that, like ``dockerd --tlsverify``, refuses a client without a
certificate signed by its CA.

A second ``dockerd`` listener would mean restarting the engine every test shares, so the
endpoint is a byte pipe: TLS (client certificate required) on ``127.0.0.1:PORT``, plain bytes to
the socket. Hijacked exec streams pass through unchanged. ``certificates`` writes what
``docker --tlsverify`` and docker-py read from ``DOCKER_CERT_PATH`` (``ca.pem``, ``cert.pem``,
``key.pem``), made with the ``cryptography`` package, the same files docs/DEPLOY.md's openssl
commands make.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ENGINE_SOCKET = "/var/run/docker.sock"


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey]
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer[0]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _write(path: Path, key: ec.EllipticCurvePrivateKey | None, cert: x509.Certificate) -> None:
    if key is not None:
        path.with_name(path.name.replace("cert", "key")).write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


@dataclass(frozen=True)
class Certificates:
    """A CA, the server's certificate (for 127.0.0.1) and a client's, as PEM files in ``dir``."""

    dir: Path  # DOCKER_CERT_PATH: ca.pem, cert.pem, key.pem (the client's)

    @property
    def server(self) -> tuple[Path, Path]:
        return self.dir / "server-cert.pem", self.dir / "server-key.pem"


def certificates(where: Path, *, ca_name: str = "guard-test-ca") -> Certificates:
    """Write a CA, a server certificate for 127.0.0.1 and a client certificate under ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        _cert(ca_name, ca_key, (ca_name, ca_key))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    _write(where / "ca.pem", None, ca)
    for subject, usage, path in (
        ("127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH, where / "server-cert.pem"),
        ("guard", ExtendedKeyUsageOID.CLIENT_AUTH, where / "cert.pem"),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = _cert(subject, key, (ca_name, ca_key)).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if usage == ExtendedKeyUsageOID.SERVER_AUTH:
            san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
            builder = builder.add_extension(san, critical=False)
        _write(path, key, builder.sign(ca_key, hashes.SHA256()))
    return Certificates(where)


async def _gather(reader: asyncio.StreamReader, first: bytes, wait: float) -> bytes:
    """``first`` and whatever else arrives within ``wait`` seconds, as one piece."""
    await asyncio.sleep(wait)
    data = bytearray(first)
    with contextlib.suppress(TimeoutError):
        while more := await asyncio.wait_for(reader.read(65536), 0.01):
            data += more
    return bytes(data)


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, coalesce: float = 0.0
) -> None:
    with contextlib.suppress(OSError, ConnectionError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            if coalesce:
                data = await _gather(reader, data, coalesce)
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError, RuntimeError):
        if writer.can_write_eof():
            writer.write_eof()  # the engine sees the client's half-close (a closed stdin)
        else:
            writer.close()


class TlsEngine:
    """The TLS endpoint, on its own thread and loop; ``url`` is its ``DOCKER_HOST``.

    ``coalesce`` (seconds) makes it a slow link: what the engine sends within that time after
    a first byte reaches the client as one piece (an HTTP answer's headers and the first
    frames of a hijacked stream in one read), as TCP may deliver it from a remote engine."""

    def __init__(
        self, certs: Certificates, socket_path: str = ENGINE_SOCKET, coalesce: float = 0.0
    ) -> None:
        self.certs = certs
        self.socket_path = socket_path
        self.coalesce = coalesce
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(
            ssl.Purpose.CLIENT_AUTH, cafile=self.certs.dir / "ca.pem"
        )
        context.verify_mode = ssl.CERT_REQUIRED  # dockerd --tlsverify
        context.load_cert_chain(*self.certs.server)
        return context

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            engine_r, engine_w = await asyncio.open_unix_connection(self.socket_path)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, engine_w), _pipe(engine_r, writer, self.coalesce))
        finally:
            for w in (engine_w, writer):
                w.transport.abort()

    def _quiet(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        """A refused handshake (no or a foreign client certificate) is the point, not noise."""
        if not isinstance(context.get("exception"), (ssl.SSLError, ConnectionError)):
            loop.default_exception_handler(context)

    async def _start(self) -> None:
        self._loop.set_exception_handler(self._quiet)
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", 0, ssl=self._context(), ssl_handshake_timeout=10
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    def start(self) -> TlsEngine:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        async def _stop() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:  # the connections still open: their finally closes both ends
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextlib.contextmanager
def tls_engine(where: Path, coalesce: float = 0.0) -> Iterator[TlsEngine]:
    """The local engine behind a TLS endpoint with fresh certificates under ``where``."""
    engine = TlsEngine(certificates(where), coalesce=coalesce).start()
    try:
        yield engine
    finally:
        engine.stop()


def tls_environ(engine: TlsEngine) -> dict[str, str]:
    """What a client of ``engine`` sets: docker's own variables, as for a remote engine."""
    return {
        "DOCKER_HOST": engine.url,
        "DOCKER_TLS_VERIFY": "1",
        "DOCKER_CERT_PATH": str(engine.certs.dir),
    }
