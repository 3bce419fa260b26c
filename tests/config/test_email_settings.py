"""The ``email:`` section: what it refuses names the field and the fix; the password is a
secret the redactor masks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from guard.config import EmailSettings, Settings
from guard.config.fast import resolve

pytestmark = pytest.mark.unit

BASE = {"host": "smtp.example.org", "from": "guard@example.org", "to": "ops@example.org"}


def test_the_port_follows_the_security_and_nothing_set_is_not_configured() -> None:
    assert EmailSettings.model_validate(BASE).port == 587
    assert EmailSettings.model_validate({**BASE, "security": "tls"}).port == 465
    assert EmailSettings.model_validate({**BASE, "port": 2525}).port == 2525
    assert not EmailSettings().configured and EmailSettings.model_validate(BASE).configured


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ({"host": "smtp.example.org", "to": "ops@example.org"}, "email.from"),
        ({**BASE, "username": "guard"}, "email.password"),
        ({**BASE, "security": "none", "username": "u", "password": "p"}, "security: starttls"),
        ({**BASE, "security": "ssl"}, "security"),
    ],
)
def test_a_wrong_section_names_the_field(section: dict[str, object], named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        EmailSettings.model_validate(section)


def test_plain_smtp_with_a_password_is_let_through_on_loopback_only() -> None:
    local = {**BASE, "host": "127.0.0.1", "security": "none", "username": "u", "password": "p"}
    assert EmailSettings.model_validate(local).port == 25


def test_the_password_is_a_secret_both_resolvers_mask(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GUARD_EMAIL__PASSWORD", "s3cret-smtp-pass")
    for name in ("HOST", "FROM", "TO"):
        monkeypatch.setenv(f"GUARD_EMAIL__{name}", BASE[name.lower()])
    settings = Settings(data_dir=tmp_path, email={**BASE, "username": "guard"})
    assert "s3cret-smtp-pass" in settings.secret_values()
    assert "s3cret-smtp-pass" not in repr(settings.email)
    resolved = resolve(None)
    assert resolved is not None and "s3cret-smtp-pass" in resolved.secrets
