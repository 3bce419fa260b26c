"""The ``matrix`` section: the Matrix channel's homeserver, bot account and room
(docs/CHANNELS.md). Tested by tests/config/test_matrix_settings.py."""

from __future__ import annotations

import re

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from guard.config.chat import ChatSection
from guard.config.validators import INSECURE_HELP, refuse_cleartext
from guard.domain.durations import Duration

USER_ID = re.compile(r"@[^:\s]+:\S+")
ROOM_ID = re.compile(r"![^:\s]+(:\S+)?")  # room version 12 ids have no server part


class MatrixSettings(ChatSection):
    # before homeserver: its check reads them
    access_token: SecretStr | None = Field(
        default=None, description="the bot user's access token (GUARD_MATRIX__ACCESS_TOKEN)"
    )
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    homeserver: str | None = Field(default=None, description="https://matrix.example.org")
    user_id: str | None = Field(default=None, description="the bot's Matrix id: @guard:example.org")
    room_id: str | None = Field(
        default=None, description="the room Guard asks in (!abc:example.org); the bot joins it"
    )
    allowed_user_ids: list[str] = Field(
        default_factory=list,
        description="Matrix ids allowed to answer (approvers); access.matrix gives other roles",
    )
    sync_timeout: Duration = Field(default=10.0, description="the /sync long-polling timeout")
    mute_for: Duration = Field(default=3600.0, description="how long the mute reaction mutes")
    group_wait: Duration = Field(
        default=10.0,
        description="incidents announced within this long of the last "
        "announcement go out together, as one message with a line per incident (0: never)",
    )

    @field_validator("homeserver")
    @classmethod
    def _homeserver_in_clear(cls, value: str | None, info: ValidationInfo) -> str | None:
        return refuse_cleartext(value, info, "access_token")

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, value: str | None) -> str | None:
        if value is not None and not USER_ID.fullmatch(value):
            raise ValueError(f"matrix.user_id {value!r}: a Matrix id is @name:server")
        return value

    @field_validator("room_id")
    @classmethod
    def _room_id(cls, value: str | None) -> str | None:
        if value is not None and not ROOM_ID.fullmatch(value):
            raise ValueError(
                f"matrix.room_id {value!r}: a room id starts with ! (!opaque:server, or "
                "!opaque from room version 12; Element: Room settings > Advanced), not an "
                "alias (#ops:server)"
            )
        return value

    @model_validator(mode="after")
    def _room_is_the_chat(self) -> MatrixSettings:
        """``room_id`` is the channel's default chat (``chat_id``, as every channel names it)."""
        if self.room_id is None and self.chat_id is not None:
            self.room_id = str(self.chat_id)
        self.chat_id = self.room_id
        return self

    @property
    def configured(self) -> bool:
        """A homeserver, an account and a room: the channel runs."""
        return None not in (self.homeserver, self.user_id, self.access_token, self.room_id)
