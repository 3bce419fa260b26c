"""The Slack channel's section (docs/CHANNELS.md): a bot token, an app-level token for Socket
Mode (no public URL: an appliance behind NAT receives over its own outbound websocket), or a
signing secret for the Events/Interactivity HTTP endpoint, and the channel Guard asks in.

The tokens are secrets, read from the environment like Telegram's (``GUARD_SLACK__BOT_TOKEN``,
``GUARD_SLACK__APP_TOKEN``, ``GUARD_SLACK__SIGNING_SECRET``) and masked by the redactor."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from guard.config.chat import ChatSection
from guard.config.validators import INSECURE_HELP, refuse_cleartext
from guard.domain.durations import Duration


class SlackSettings(ChatSection):
    """``chat_id``, the channel's default chat, is ``channel`` (either may be given)."""

    bot_token: SecretStr | None = Field(default=None, description="the bot token (xoxb-...)")
    app_token: SecretStr | None = Field(
        default=None, description="the app-level token (xapp-...) with connections:write"
    )
    signing_secret: SecretStr | None = Field(
        default=None, description="the app's signing secret (mode: http)"
    )
    channel: str | None = Field(default=None, description="the channel id Guard asks in (C...)")
    allowed_user_ids: list[str] = Field(default_factory=list)
    mode: Literal["socket", "http"] = Field(
        default="socket",
        description="socket: Socket Mode over an outbound websocket (no public URL); http: "
        "Slack posts events and presses to listen:port/slack/events",
    )
    listen: str = "127.0.0.1"
    port: int = Field(default=3000, ge=1, le=65535, description="the HTTP endpoint's port")
    # before api_base_url, like the tokens: its check reads them
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    api_base_url: str = "https://slack.com/api/"
    mute_for: Duration = Field(default=3600.0, description="how long the mute button mutes")
    group_wait: Duration = Field(
        default=10.0,
        description="incidents announced within this long of the last announcement go out "
        "together, as one message with a line per incident (0: never)",
    )

    @field_validator("api_base_url")
    @classmethod
    def _api_in_clear(cls, value: str, info: ValidationInfo) -> str:
        return refuse_cleartext(value, info, "bot_token", "app_token")

    @model_validator(mode="after")
    def _receiving(self) -> SlackSettings:
        if self.channel is None and self.chat_id is not None:
            self.channel = str(self.chat_id)
        self.chat_id = self.channel
        if self.configured and self.mode == "socket" and self.app_token is None:
            raise ValueError(
                "slack.mode socket needs slack.app_token (an xapp-... app-level token with "
                "connections:write; GUARD_SLACK__APP_TOKEN), or set slack.mode: http with "
                "slack.signing_secret"
            )
        if self.configured and self.mode == "http" and self.signing_secret is None:
            raise ValueError(
                "slack.mode http needs slack.signing_secret (the app's Basic Information page; "
                "GUARD_SLACK__SIGNING_SECRET): unsigned requests are never believed"
            )
        return self

    @property
    def configured(self) -> bool:
        """A bot token and a channel: the runner starts and incidents go to Slack."""
        return self.bot_token is not None and self.channel is not None
