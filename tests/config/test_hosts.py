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
