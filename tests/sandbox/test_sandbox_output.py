"""Output handling: capped streaming (Guard's memory stays flat), stdin, and secret redaction."""

from __future__ import annotations

import secrets
from pathlib import Path

import docker
import pytest

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.redact import Redactor
from guard.sandbox import OutputBuffer, Sandbox, SandboxGrants, create_sandbox
from guard.sandbox.docker import DockerSandbox
from tests.helpers.sandbox import TEST_PREFIX, assert_host_ok, vm_kib


def _reset_peak_rss() -> None:
    """Reset VmHWM so it shows this test's peak, not the session's."""
    Path("/proc/self/clear_refs").write_text("5")


@pytest.mark.docker
async def test_100mb_of_stdout_is_capped_and_memory_stays_bounded(
    sbx: DockerSandbox, sbx_client: docker.DockerClient
) -> None:
    _reset_peak_rss()
    rss_before = vm_kib("VmRSS")
    result = await sbx.run("yes 0123456789abcdef | head -c 100000000; echo done >&2", timeout=60)
    peak, rss_after = vm_kib("VmHWM"), vm_kib("VmRSS")
    limit = sbx.settings.output_limit
    assert result.exit_code == 0 and result.stderr == "done\n"
    assert result.stdout_truncated == 100_000_000 - limit
    assert result.stdout.startswith("0123456789abcdef\n")
    assert result.stdout.endswith(f"\n[... truncated {100_000_000 - limit} bytes ...]")
    assert len(result.stdout.encode()) < limit + 100
    assert peak - rss_before < 30 * 1024, (rss_before, peak)  # KiB: never near the 100 MB
    assert rss_after - rss_before < 10 * 1024
    assert_host_ok(sbx_client)


@pytest.mark.docker
async def test_stdin_env_and_workdir(sbx: DockerSandbox) -> None:
    result = await sbx.run(
        'cat; echo "$GREETING"; pwd', stdin="from stdin\n", env={"GREETING": "hi"}, workdir="/tmp"
    )
    assert result.stdout == "from stdin\nhi\n/tmp\n"
    assert (await sbx.run(["sh", "-c", "pwd"])).stdout == "/workspace\n"
    big = b"x" * 1_000_000  # larger than any pipe buffer: stdin is fed while output is read
    echoed = await sbx.run("wc -c", stdin=big)
    assert echoed.stdout.strip() == "1000000"


@pytest.mark.docker
async def test_granted_secret_is_redacted_everywhere(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings
) -> None:
    value = f"pw-{secrets.token_hex(8)}"
    box = create_sandbox(
        sbx_settings,
        incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
        client=sbx_client,
        grants=SandboxGrants(secrets=["DB_PASSWORD"]),
        environ={"DB_PASSWORD": value},
    )
    assert isinstance(box, DockerSandbox) and isinstance(box, Sandbox)
    try:
        result = await box.run('echo "password=$DB_PASSWORD"; echo "$DB_PASSWORD" >&2')
        assert result.stdout == "password=[REDACTED:DB_PASSWORD]\n"
        assert result.stderr == "[REDACTED:DB_PASSWORD]\n"
        assert value not in repr(result)
        # A secret straddling the output cap is still caught, not half-shown.
        pad = sbx_settings.output_limit - 5
        cut = await box.run(f'head -c {pad} /dev/zero | tr "\\0" a; echo "$DB_PASSWORD"')
        assert cut.stdout_truncated > 0 and value[:4] not in cut.stdout
        # Not on any command line, not in the container's config: only in the exec's env.
        attrs = sbx_client.api.inspect_container(box.container_id)
        assert value not in str(attrs)
        assert value not in (await box.run("cat /proc/1/cmdline; ps -o args")).stdout
    finally:
        await box.close()


def test_missing_secret_is_reported_by_name() -> None:
    with pytest.raises(SandboxError, match="API_TOKEN"):
        create_sandbox(
            SandboxSettings(),
            incident_id="x",
            grants=SandboxGrants(secrets=["API_TOKEN"]),
            environ={},
        )


def test_redactor_longest_first_and_bytes() -> None:
    r = Redactor({"SHORT": "abcd", "LONG": "abcdefgh"})
    assert r.redact("x abcdefgh y abcd") == "x [REDACTED:LONG] y [REDACTED:SHORT]"
    assert r.redact_bytes(b"abcdefgh!") == b"[REDACTED:LONG]!"
    assert Redactor().redact("abcd") == "abcd"
    r.register("EMPTY", "")
    assert r.redact("") == ""


def test_output_buffer_caps_and_marks() -> None:
    buf = OutputBuffer(limit=10)
    for _ in range(5):
        buf.feed(b"0123456789")
    assert buf.total == 50 and buf.dropped == 40
    assert buf.text(None) == "0123456789\n[... truncated 40 bytes ...]"
    whole = OutputBuffer(limit=10)
    whole.feed(b"short")
    assert whole.text(None) == "short" and whole.dropped == 0
