"""Guard's probe client against real local servers: keep-alive, chunked bodies, stale
connections, HTTP/1.0, and TLS with and without verification."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from guard.monitors.http import HttpMonitor
from guard.monitors.http_clients import HttpClients
from guard.monitors.http_probe import ProbeClient, handles
from guard.playbooks.models import HttpMonitorSpec

Answer = Callable[[bytes], bytes]


class Server:
    """An asyncio server answering each request with ``answer(request line)``; counts
    connections; ``close_after`` requests per connection (0: keep it open)."""

    def __init__(self, answer: Answer, close_after: int = 0) -> None:
        self.answer, self.close_after, self.connections = answer, close_after, 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while line := await reader.readline():
                while (await reader.readline()).strip():
                    pass
                writer.write(self.answer(line))
                await writer.drain()
                served += 1
                if self.close_after and served >= self.close_after:
                    break
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., object]]:
    servers: list[asyncio.Server] = []

    async def start(server: Server, tls: ssl.SSLContext | None = None) -> str:
        s = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=tls)
        servers.append(s)
        scheme = "https" if tls else "http"
        return f"{scheme}://127.0.0.1:{s.sockets[0].getsockname()[1]}"

    yield start
    for s in servers:
        s.close()


def ok(body: bytes = b"ready") -> Answer:
    return lambda _line: b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_connections_are_kept_alive_and_reused(serve) -> None:
    server = Server(ok())
    base = await serve(server)
    client = ProbeClient()
    for _ in range(5):
        resp = await client.request("GET", base + "/healthz", headers={}, timeout=5)
        assert (resp.status_code, resp.text) == (200, "ready")
    assert server.connections == 1
    await client.aclose()


async def test_a_connection_the_server_closed_is_replaced(serve) -> None:
    server = Server(ok(), close_after=1)  # keep-alive announced, then closed: stale next time
    base = await serve(server)
    client = ProbeClient()
    for _ in range(3):
        assert (await client.request("GET", base, headers={}, timeout=5)).status_code == 200
    assert server.connections == 3
    await client.aclose()


async def test_chunked_bodies_and_close_delimited_http10(serve) -> None:
    chunked = Server(lambda _l: b"HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n"
                                b"4\r\nnot \r\n5\r\nready\r\n0\r\n\r\n")
    old = Server(lambda _l: b"HTTP/1.0 200 OK\r\n\r\nold server", close_after=1)
    client = ProbeClient()
    resp = await client.request("GET", await serve(chunked), headers={}, timeout=5)
    assert (resp.status_code, resp.text) == (503, "not ready")
    resp = await client.request("GET", await serve(old), headers={}, timeout=5)
    assert (resp.status_code, resp.text) == (200, "old server")
    await client.aclose()


async def test_a_silent_server_times_out_and_garbage_is_a_protocol_error(serve) -> None:
    silent = Server(lambda _l: b"")
    garbage = Server(lambda _l: b"SSH-2.0-OpenSSH\r\n\r\n", close_after=1)
    client = ProbeClient()
    with pytest.raises(httpx.TimeoutException):
        await client.request("GET", await serve(silent), headers={}, timeout=0.3)
    with pytest.raises(httpx.RemoteProtocolError):
        await client.request("GET", await serve(garbage), headers={}, timeout=5)
    await client.aclose()


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return key, cert


async def test_tls_verified_or_not_through_the_monitor(serve, self_signed) -> None:
    key, cert = self_signed
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    base = await serve(Server(ok()), tls)
    clients = HttpClients()

    async def check(**kw: object) -> tuple[str, str]:
        m = HttpMonitor(HttpMonitorSpec.model_validate(
            {"id": "tls", "type": "http", "url": base + "/healthz", **kw}), clients=clients)
        (sig,) = (await m.check({})).signals
        await m.close()
        return sig.kind, sig.message

    assert (await check(tls_verify=False))[0] == "http_ok"
    kind, message = await check()
    assert kind == "http_unreachable" and "certificate" in message.lower()


def test_what_goes_to_httpx_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    assert handles("https://api.example.com:8443/healthz?deep=1")
    assert not handles("https://user:pw@api.example.com/")
    assert not handles("http://bücher.example/")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert not handles("https://api.example.com/")
