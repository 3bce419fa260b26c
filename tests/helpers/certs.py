"""Certificates for TLS tests (the ``cryptography`` package): a CA, a leaf it signs (valid or
expired), and a TLS server on 127.0.0.1 that shakes hands with it and hangs up."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.fakes.local_http import QuietServer


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_certs(folder: Path, *, days_left: int, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A CA (``ca.pem``) and a leaf for ``host`` it signed, expiring in ``days_left`` days
    (negative: expired that long ago); returns (ca.pem, server.pem with its key)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("Guard Test CA"))
        .issuer_name(_name("Guard Test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=400))
        .not_valid_after(now + dt.timedelta(days=400))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    after = now + dt.timedelta(days=days_left, hours=1)
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(host))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(min(now, after) - dt.timedelta(days=90))
        .not_valid_after(after)
        .add_extension(
            x509.SubjectAlternativeName([_san(host)]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem, server_pem = folder / "ca.pem", folder / "server.pem"
    ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    server_pem.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + _pem(key))
    return ca_pem, server_pem


@contextlib.contextmanager
def tls_server(server_pem: Path) -> Iterator[int]:
    """Serve TLS handshakes with ``server_pem`` on 127.0.0.1; yields the port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_pem)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with contextlib.suppress(OSError, ssl.SSLError):
                conn.settimeout(5)
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            with contextlib.suppress(OSError):
                conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextlib.contextmanager
def https_site(server_pem: Path, body: bytes = b"ok") -> Iterator[int]:
    """An HTTPS service on 127.0.0.1 answering every GET with 200 and ``body``; yields the
    port."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_pem)
    server = QuietServer(("127.0.0.1", 0), Answer)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
