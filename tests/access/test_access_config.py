"""The ``access:`` section: roles per Telegram id, and a proxy header only with its proxies."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from guard.config import Settings

pytestmark = pytest.mark.unit


def test_a_valid_section() -> None:
    settings = Settings(
        access={
            "telegram": {"42": "viewer", 7: "admin"},
            "proxy_header": "X-Forwarded-User",
            "trusted_proxies": ["10.0.0.5", "10.1.0.0/16", "::1"],
        }
    )
    assert settings.access.telegram == {42: "viewer", 7: "admin"}
    assert Settings().access.telegram == {} and Settings().access.proxy_header is None


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ({"telegram": {"42": "root"}}, ["access.telegram.42", "'viewer', 'operator'"]),
        ({"telegram": {"alice": "viewer"}}, ["access.telegram.alice"]),
        ({"proxy_header": "X-User"}, ["access.proxy_header needs access.trusted_proxies"]),
        (
            {"proxy_header": "X User", "trusted_proxies": ["::1"]},
            ["access.proxy_header", "not an HTTP header name"],
        ),
        (
            {"trusted_proxies": ["10.0.0.0/8", "proxy.lan"]},
            ["access.trusted_proxies", "[1] 'proxy.lan' is not an IP address or network"],
        ),
        ({"roles": {}}, ["access.roles", "Extra inputs are not permitted"]),
    ],
)
def test_bad_input_names_the_field(section: dict[str, object], said: list[str]) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(access=section)
    text = str(err.value)
    for part in said:
        assert part in text
