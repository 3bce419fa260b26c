"""The hosts: section: its errors name the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from guard.config import Settings

pytestmark = pytest.mark.unit


def _settings(tmp_path: Path, hosts: dict[str, object]) -> Settings:
    return Settings(data_dir=tmp_path, hosts=hosts)  # type: ignore[arg-type]


def test_a_host_is_read(tmp_path: Path) -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB comment"
    s = _settings(tmp_path, {"web1": {"address": "10.0.0.5", "key": "web1_ssh", "host_key": key}})
    assert s.hosts["web1"].host_key == "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB"
    assert (s.hosts["web1"].port, s.hosts["web1"].user) == (22, "guard")


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ({"units": ["nginx"]}, "not a full systemd unit name"),
        ({"paths": ["var/log/*.log"]}, "must be an absolute glob"),
        ({"paths": ["/var/log/../etc/*"]}, "without '..'"),
        ({"host_key": "not a key"}, "guard host add NAME --scan"),
        ({"jump": "nowhere"}, "hosts.web1.jump: 'nowhere' is not another configured host"),
        ({"commands": {"a b": "/bin/true"}}, "command name 'a b'"),
    ],
)
def test_bad_hosts_are_refused_naming_the_field(
    tmp_path: Path, host: dict[str, object], says: str
) -> None:
    with pytest.raises(ValidationError, match=r"(?s)" + says.replace("(", r"\(")):
        _settings(tmp_path, {"web1": {"address": "h", "key": "k", **host}})


def test_a_hosts_private_key_is_masked_whole_and_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from guard.redact import Policy

    pem = _openssh_key()
    monkeypatch.setenv("GUARD_SECRET_WEB1_SSH", pem)
    (tmp_path / "secrets").mkdir()
    other = _openssh_key()
    (tmp_path / "secrets" / "db1_ssh").write_text(other)
    s = _settings(
        tmp_path,
        {
            "web1": {"address": "10.0.0.5", "key": "web1_ssh"},
            "db1": {"address": "x", "key": "db1_ssh"},
        },
    )
    policy = Policy(secrets=s.secret_values())
    for key in (pem, other):  # each body line alone, as a log prints a key line by line
        for body in [line for line in key.splitlines() if "-----" not in line]:
            said = policy.redact(f"2026-12-06 ssh: loaded {body} for web1")
            assert said == "2026-12-06 ssh: loaded [REDACTED:guard-secret] for web1"


def _openssh_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return (
        Ed25519PrivateKey.generate()
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        .decode()
    )
