"""Probe grants (``probes.allow``, ``probes.secrets``): a probe reaches only what the settings
name, and says which setting to change when it is refused; secrets stay out of its words."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from guard.actions import ActionError, ActionRegistry
from guard.actions.probes.reach import cap, split_target
from guard.config import Settings
from tests.helpers.probes import probe, probe_settings

pytestmark = pytest.mark.unit


async def test_a_host_the_grant_does_not_name_is_refused(tmp_path: Path) -> None:
    settings = probe_settings(tmp_path, allow=[{"host": "db.internal", "ports": [5432]}])
    with pytest.raises(ActionError) as refused:
        await probe("probe.tcp 10.20.30.40:5432", settings)
    assert "10.20.30.40 is not in probes.allow" in str(refused.value)
    assert "{host: 10.20.30.40, ports: [5432]}" in str(refused.value)


async def test_a_port_the_grant_does_not_list_is_refused(tmp_path: Path) -> None:
    settings = probe_settings(tmp_path, allow=[{"host": "127.0.0.1", "ports": [5432]}])
    with pytest.raises(ActionError, match=r"port 22 of 127.0.0.1 is not in probes.allow"):
        await probe("probe.tcp 127.0.0.1:22", settings)


async def test_loopback_is_reached_only_when_named(tmp_path: Path) -> None:
    """No grant at all: not even Guard's own machine (its console, its database) is reached."""
    with pytest.raises(ActionError, match=r"127\.0\.0\.1 is not in probes.allow"):
        await probe("probe.http http://127.0.0.1:9/", probe_settings(tmp_path))


async def test_a_granted_name_that_resolves_to_loopback_is_refused(tmp_path: Path) -> None:
    """A DNS (or hosts file) answer does not widen a grant for a name to this machine."""
    hosts = Path("/etc/hosts").read_text()  # noqa: ASYNC240 (a small local file)
    names = [
        w
        for line in hosts.splitlines()
        if line.startswith("127.")
        for w in line.split()[1:]
        if w not in ("localhost", "localhost.localdomain")
    ]
    if not names:
        pytest.skip("no name but localhost resolves to loopback in /etc/hosts here")
    settings = probe_settings(tmp_path, allow=[{"host": names[0]}])
    with pytest.raises(ActionError, match=r"resolves to 127\.[0-9.]+, a local address; name"):
        await probe(f"probe.tcp {names[0]}:9", settings)


async def test_a_secret_must_be_granted_and_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_DB_URL", "postgresql://app:s3cr3t-pw@db:5432/orders")
    settings = probe_settings(tmp_path, allow=[{"host": "db"}])
    with pytest.raises(ActionError, match=r"'ORDERS_DB_URL' is not in probes\.secrets"):
        await probe("probe.postgres secret=ORDERS_DB_URL", settings)
    settings = probe_settings(tmp_path, allow=[{"host": "db"}], secrets=["UNSET_DB_URL"])
    with pytest.raises(ActionError, match="UNSET_DB_URL is not set: export it"):
        await probe("probe.postgres UNSET_DB_URL", settings)


async def test_a_secret_s_host_must_be_granted_and_its_value_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_DB_URL", "postgresql://app:s3cr3t-pw@db.elsewhere:5432/orders")
    settings = probe_settings(tmp_path, secrets=["ORDERS_DB_URL"])
    with pytest.raises(ActionError) as refused:
        await probe("probe.postgres ORDERS_DB_URL queries=connections", settings)
    assert "db.elsewhere is not in probes.allow" in str(refused.value)
    assert "s3cr3t-pw" not in str(refused.value)


async def test_probes_are_read_only(tmp_path: Path) -> None:
    settings = probe_settings(tmp_path, allow=[{"host": "127.0.0.1"}])
    with pytest.raises(ActionError, match="read-only: method GET, HEAD or OPTIONS, not DELETE"):
        await probe("probe.http http://127.0.0.1:9/x DELETE", settings)
    with pytest.raises(ActionError, match="unknown query drop; one of connections"):
        await probe("probe.postgres X queries=drop", probe_settings(tmp_path, secrets=["X"]))
    registry = ActionRegistry()
    assert registry.read_only("probe.http http://x/") and registry.read_only("probe.tcp a:1")
    assert not registry.read_only("docker.restart api") and not registry.read_only("ls -l")


def test_the_settings_refuse_what_they_cannot_mean(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="Guard's own configuration"):
        Settings(data_dir=tmp_path, probes={"secrets": ["GUARD_TELEGRAM__BOT_TOKEN"]})
    with pytest.raises(ValidationError, match="port 70000: must be from 1 to 65535"):
        Settings(data_dir=tmp_path, probes={"allow": [{"host": "db", "ports": [70000]}]})
    assert Settings(data_dir=tmp_path).probes.allow == []


def test_targets_and_caps() -> None:
    assert split_target("probe.tcp", "DB:5432", None) == ("db", 5432)
    assert split_target("probe.tls", "[::1]:8443", 443) == ("::1", 8443)
    assert split_target("probe.tls", "example.org", 443) == ("example.org", 443)
    with pytest.raises(ActionError, match="give the port"):
        split_target("probe.tcp", "db", None)
    text = cap("x" * 10_000, 8192)
    assert len(text) == 8192 and text.endswith("characters cut: probes.output_limit)")
