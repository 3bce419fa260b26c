"""``guard check-config`` names a broken ``intake:`` source by its field."""

from __future__ import annotations

from typing import Any

import pytest

from guard.config import Settings
from guard.domain.exceptions import ConfigError
from tests.conftest import GuardHome
from tests.helpers.intake import TOKEN

WEBHOOK = {"id": "up", "type": "webhook", "token": TOKEN, "kind": "'down'", "target": "url"}


def check(home: GuardHome, intake: list[dict[str, Any]]) -> str:
    home.write_config({"intake": intake})
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_check_config_names_the_problem_of_each_source(home: GuardHome) -> None:
    am = {"id": "am", "type": "alertmanager", "token": TOKEN}
    out = check(home, [am, {**WEBHOOK, "id": "x"}, {**WEBHOOK, "kind": "foo[?"}])
    assert "intake[2].kind: JMESPath 'foo[?'" in out
    out = check(home, [am, {"id": "bare", "type": "grafana"}])
    assert "intake[1]: intake source 'bare' has no authentication" in out
    out = check(home, [{**am, "target": "{{ labels.instance"}])
    assert "intake[0].target: template '{{ labels.instance'" in out
    out = check(home, [am, {**am, "type": "grafana"}])
    assert "id 'am' is used by two intake sources" in out
    out = check(home, [{**WEBHOOK, "rate": "lots"}])
    assert "intake[0].rate: rate 'lots'" in out
    assert TOKEN not in out


@pytest.mark.unit
def test_a_password_in_alertmanager_url_needs_https_off_loopback(home: GuardHome) -> None:
    def load(url: str, **extra: Any) -> Settings:
        source = {"id": "am", "type": "alertmanager", "token": TOKEN, "alertmanager_url": url}
        home.write_config({"intake": [{**source, **extra}]})
        return home.settings()

    with pytest.raises(ConfigError) as refused:
        load("http://guard:pw@alertmanager:9093")
    assert "intake[0].alertmanager_url: plain http to alertmanager" in str(refused.value)
    assert load("http://alertmanager:9093").intake[0].alertmanager_url  # no credential
    assert load("https://guard:pw@alertmanager:9093").intake  # encrypted
    assert load("http://guard:pw@127.0.0.1:9093").intake  # loopback
    assert load("http://guard:pw@alertmanager:9093", allow_insecure_http=True).intake


@pytest.mark.unit
def test_intake_secrets_are_redacted_settings_secrets(home: GuardHome) -> None:
    home.write_config(
        {"intake": [{**WEBHOOK, "hmac_secret": "hmac-secret-value", "hmac_header": "X-Sig"}]}
    )
    settings = home.settings()
    assert {TOKEN, "hmac-secret-value"} <= set(settings.secret_values())
    assert TOKEN not in repr(settings)
