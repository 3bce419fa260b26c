"""The ``matrix`` section: configured with a homeserver, an account, a token and a room; the
token from the environment, a secret every log and message masks; ids checked with errors that
say what a Matrix id looks like; plain http off this machine refused with the token; roles by
Matrix id (``access.matrix``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from guard.config import Settings

pytestmark = pytest.mark.unit

TOKEN = "syt_Z3VhcmQ_FFrsmuecIdZRktUfXzSc_1g8yvR"
ROOM = "!Zj5Gisp-ww16_prHRSjvx6KnVn9yynTU6kH7IIZsJZg"


def settings(tmp_path: Path, **matrix: object) -> Settings:
    return Settings(data_dir=tmp_path, matrix=matrix)


def test_configured_from_the_section_and_the_token_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not settings(tmp_path).matrix.configured
    monkeypatch.setenv("GUARD_MATRIX__ACCESS_TOKEN", TOKEN)
    got = settings(
        tmp_path,
        homeserver="https://matrix.example.org",
        user_id="@guard:example.org",
        room_id=ROOM,
    )
    assert got.matrix.configured and got.matrix.chat_id == ROOM
    assert TOKEN in got.secret_values()  # masked by the redactor
    assert TOKEN not in repr(got.matrix)


def test_ids_and_cleartext_are_checked(tmp_path: Path) -> None:
    settings(tmp_path, room_id="!abc:example.org")  # before room version 12: with a server
    with pytest.raises(ValidationError, match="not an alias"):
        settings(tmp_path, room_id="#ops:example.org")
    with pytest.raises(ValidationError, match="a Matrix id is @name:server"):
        settings(tmp_path, user_id="guard")
    with pytest.raises(ValidationError, match=r"plain http to matrix\.example\.org"):
        settings(tmp_path, homeserver="http://matrix.example.org", access_token=TOKEN)
    settings(tmp_path, homeserver="http://127.0.0.1:8008", access_token=TOKEN)  # loopback


def test_roles_by_matrix_id(tmp_path: Path) -> None:
    got = Settings(data_dir=tmp_path, access={"matrix": {"@ops:example.org": "approver"}})
    assert got.access.matrix == {"@ops:example.org": "approver"}
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path, access={"matrix": {"@ops:example.org": "boss"}})
