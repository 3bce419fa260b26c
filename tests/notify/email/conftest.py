"""A real SMTP server (``tests.helpers.mailserver``) per test, and Guard's settings for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard.config import EmailSettings, Settings
from guard.store.db import Database, open_database
from tests.helpers.mailserver import MailServer

PUBLIC_URL = "https://guard.example.com"


@pytest.fixture
def smtpd(tmp_path: Path) -> Iterator[MailServer]:
    server = MailServer(tmp_path / "certs").start()
    yield server
    server.stop()


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def settings_for(tmp_path: Path, server: MailServer, **email: object) -> Settings:
    return Settings(
        data_dir=tmp_path,
        skills_dir=tmp_path / "skills",
        playbooks_dir=tmp_path / "playbooks",
        public_url=PUBLIC_URL,
        email=EmailSettings.model_validate(server.settings(**email)),
    )
