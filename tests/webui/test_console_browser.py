"""The web console in a real headless Chromium (Debian's, driven by Selenium) against a real
``guard run``: a real fault (an HTTP check against a local service that fails) raises an
incident; an approver signs in, approves the skill and sees it resolved; a viewer finds no
approve form; a forged post without the CSRF token is refused. The screenshots in docs/img/
(shown in docs/WEB.md) are taken here: into docs/img/ with GUARD_SCREENSHOTS=1, else into the
test's own folder (a test run writes no tracked file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from guard.store.models import HumanCommand, Incident
from tests.conftest import REPO, GuardHome
from tests.helpers.agent import running_guard, wait_for
from tests.helpers.telegram import Service, http_playbook, write_http_skill
from tests.webui.browser import chromium
from tests.webui.helpers import LOCAL, cli_token, console_url

pytestmark = pytest.mark.browser


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return REPO / "docs" / "img" if os.environ.get("GUARD_SCREENSHOTS") == "1" else tmp_path


def awaiting(home: GuardHome) -> int | None:
    with home.database().session() as s:
        found = s.exec(select(Incident).where(Incident.state == "awaiting_human")).first()
        return found.id if found else None


def sign_in(driver: Any, base: str, secret: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/login")
    driver.find_element(By.ID, "token").send_keys(secret)
    driver.find_element(By.ID, "signin").click()
    wait_for(lambda: driver.current_url.rstrip("/") == base, 30, "the overview")


def text_of(driver: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, element_id).text)


def shot(driver: Any, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / name))


def test_approve_in_chromium_heals_a_real_fault(
    home: GuardHome, service: Service, shots: Path
) -> None:
    from selenium.webdriver.common.by import By

    home.write_config(
        {
            **LOCAL,
            "sandbox": {"backend": "local"},
            "agent": {"verify_timeout": "5s", "poll_interval": "200ms"},
            "skills": {"git_author": "Guard Test <guard@test>"},
        }
    )
    http_playbook(home, service)
    write_http_skill(home, service)  # trust: approval, so Guard asks first
    ann, vic = cli_token(home, "ann", "approver"), cli_token(home, "vic", "viewer")
    with running_guard(home) as (_, log), chromium() as driver:
        base = console_url(log)
        inc = wait_for(lambda: awaiting(home), 60, "the incident to ask for approval")

        sign_in(driver, base, ann)
        assert text_of(driver, "who") == "ann"
        assert f"/incidents/{inc}" in driver.find_element(By.ID, "incidents").get_attribute(
            "innerHTML"
        )
        shot(driver, shots, "web-overview.png")
        driver.get(f"{base}/incidents/{inc}")
        assert text_of(driver, "state") == "awaiting_human"
        shot(driver, shots, "web-incident.png")

        # a forged post (no CSRF token) from the signed-in page: refused, nothing queued
        driver.execute_script(
            "const f = document.createElement('form'); f.method = 'post';"
            f"f.action = '/incidents/{inc}/approve';"
            "const s = document.createElement('input'); s.name = 'skill'; s.value = 'web-fix';"
            "f.appendChild(s); document.body.appendChild(f); f.submit();"
        )
        wait_for(lambda: "CSRF" in driver.page_source, 30, "the refusal")
        assert "missing or wrong CSRF token" in text_of(driver, "message")
        with home.database().session() as s:
            assert s.exec(select(HumanCommand)).all() == []

        driver.get(f"{base}/incidents/{inc}")
        driver.find_element(By.CSS_SELECTOR, "form[action$='/approve'] button").click()
        wait_for(lambda: "queued=" in driver.current_url, 30, "the answer to be queued")

        def resolved() -> bool:
            driver.refresh()
            return text_of(driver, "state") == "resolved"

        wait_for(resolved, 60, "the approved skill to heal the service")
        assert service.fixes == 1
        assert "token:ann" in text_of(driver, "commands")

        driver.delete_all_cookies()
        sign_in(driver, base, vic)
        driver.get(f"{base}/incidents/{inc}")
        assert text_of(driver, "who") == "vic"
        for form in ("approve", "deny", "fix"):
            assert driver.find_elements(By.CSS_SELECTOR, f"form[action$='/{form}']") == []
    for name in ("web-overview.png", "web-incident.png"):
        data = (shots / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) < 400_000
