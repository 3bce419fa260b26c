"""Certificates made with openssl, and a real TLS server on 127.0.0.1 that serves one.

``Certificates`` makes a private CA and leaf certificates for a name, valid for N days, with
the openssl command line (as an operator would). ``TlsServer`` accepts TLS connections in a
thread and completes the handshake with whichever certificate it serves now (``serve`` swaps
it, so a test renews a certificate the way a deploy would)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path


class Certificates:
    """A CA (``ca``, the bundle a monitor trusts) and leaves it signs, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.ca = folder / "ca.pem"
        self._key = folder / "ca.key"
        self._openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self._key,
            "-out", self.ca, "-days", "365", "-subj", "/CN=Guard Test CA",
        )  # fmt: skip

    def leaf(self, name: str, days: int, tag: str = "") -> tuple[Path, Path]:
        """A certificate for ``name`` valid ``days`` from now: (cert, key)."""
        stem = f"{name}-{days}d{tag}"
        key, csr, cert, ext = (self.folder / f"{stem}.{s}" for s in ("key", "csr", "pem", "ext"))
        kind = "IP" if name.replace(".", "").isdigit() else "DNS"  # 127.0.0.1: an IP SAN
        ext.write_text(f"subjectAltName={kind}:{name}\n")
        self._openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", f"/CN={name}",
        )  # fmt: skip
        self._openssl(
            "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self._key,
            "-CAcreateserial", "-out", cert, "-days", str(days), "-extfile", ext,
        )  # fmt: skip
        return cert, key

    @staticmethod
    def _openssl(*args: object) -> None:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


class TlsServer:
    """A TLS server on 127.0.0.1: handshakes, then closes (enough for a certificate check)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self._ctx: ssl.SSLContext | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def serve(self, cert: Path, key: Path) -> None:
        """Serve this certificate from the next connection on."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self._ctx = ctx

    def _serve(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with contextlib.suppress(OSError), conn:
                conn.settimeout(5)
                if self._ctx is not None:
                    with self._ctx.wrap_socket(conn, server_side=True) as tls:
                        tls.recv(1)  # until the client closes

    def __enter__(self) -> TlsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@contextlib.contextmanager
def tls_server(cert: Path, key: Path) -> Iterator[TlsServer]:
    with TlsServer() as server:
        server.serve(cert, key)
        yield server
