"""Debian's headless Chromium under Selenium, driver path given (no Selenium Manager download)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def need_browser() -> None:
    """Skip unless both are installed (scripts/ensure-deps installs them)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            pytest.skip(f"{path} is not installed (scripts/ensure-deps installs it)")


@contextmanager
def chromium(width: int = 1100, height: int = 800) -> Iterator[Any]:
    """A headless Chromium driven by Selenium; quit on the way out."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    need_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="guard-chromium-")
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
