"""The exec stream over an engine whose answers arrive in one piece (a remote engine behind a
slow link, tests/fakes/docker_tls.py with ``coalesce``): the first frames, read together with
the HTTP answer's headers, are still the command's output (they were lost: empty stdout)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from guard.sandbox.docker import connect
from tests.fakes.docker_tls import tls_engine, tls_environ
from tests.helpers.sandbox import sandbox_on

pytestmark = pytest.mark.docker


@pytest.fixture
def slow_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sbx_busybox_image: str
) -> Iterator[docker.DockerClient]:
    """A client of the local engine over TLS, every answer of the engine delivered whole."""
    with tls_engine(tmp_path / "certs", coalesce=0.2) as engine:
        for name, value in tls_environ(engine).items():
            monkeypatch.setenv(name, value)
        client = connect(timeout=60)
        yield client
        client.close()


async def test_output_read_with_the_answers_headers_is_kept(
    slow_link: docker.DockerClient, sbx_busybox_image: str
) -> None:
    async with sandbox_on(slow_link, sbx_busybox_image) as box:
        assert (await box.run("pwd", workdir="/tmp")).stdout == "/tmp\n"
        both = await box.run("echo out; echo err >&2; exit 4")
        assert (both.stdout, both.stderr, both.exit_code) == ("out\n", "err\n", 4)
        big = await box.run("seq 1 10000")  # 48,894 bytes: frames past the first read
        assert big.stdout.splitlines() == [str(i) for i in range(1, 10001)]
        fed = await box.run("cat", stdin="in\n")
        assert fed.stdout == "in\n"
