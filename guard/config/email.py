"""The ``email:`` section: a notifying channel over SMTP (docs/CHANNELS.md, Email).

Email only tells: its questions link to the web console (``public_url``), where they are
answered. ``password`` is a secret: set it from the environment (``GUARD_EMAIL__PASSWORD``), and
the redactor masks it everywhere.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, SecretStr, model_validator

from guard.config.chat import ChatSection
from guard.domain.durations import Duration

PORTS = {"starttls": 587, "tls": 465, "none": 25}


class EmailSettings(ChatSection):
    """``chat_id``, the channel's default chat, is ``to`` (either may be given)."""

    host: str | None = Field(default=None, description="the SMTP server (a relay or submission)")
    port: int = Field(default=0, ge=0, le=65535, description="0: 587 starttls, 465 tls, 25 none")
    security: Literal["starttls", "tls", "none"] = Field(
        default="starttls",
        description="starttls (upgrade after connecting), tls (implicit TLS) or none (plain "
        "SMTP, refused with a password unless the host is loopback)",
    )
    username: str | None = None
    password: SecretStr | None = Field(default=None, description="GUARD_EMAIL__PASSWORD")
    from_: str | None = Field(default=None, alias="from", description="the sender address")
    to: str | None = Field(default=None, description="the default recipient address")
    timeout: Duration = Field(default=30.0, description="per SMTP exchange")
    ca_file: str | None = Field(
        default=None, description="a CA bundle to verify the server with (default: the system's)"
    )
    allowed_user_ids: list[str] = Field(
        default_factory=list, description="none: mail is answered in the web console"
    )
    mute_for: Duration = Field(default=3600.0, description="how long a mute from a mail mutes")
    group_wait: Duration = Field(
        default=0.0, description="announcements within this long go out as one mail (0: never)"
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _complete(self) -> EmailSettings:
        if self.to is None and self.chat_id is not None:
            self.to = str(self.chat_id)
        self.chat_id = self.to
        if self.host is None:
            return self
        missing = [name for name in ("from_", "to") if getattr(self, name) is None]
        if missing:
            names = ", ".join(f"email.{m.rstrip('_')}" for m in missing)
            raise ValueError(f"email.host is set but {names} is not: set the sender and recipient")
        if (self.username is None) != (self.password is None):
            raise ValueError(
                "email.username and email.password go together: set both (the password from "
                "GUARD_EMAIL__PASSWORD) or neither"
            )
        local = self.host in ("127.0.0.1", "::1", "localhost")
        if self.security == "none" and self.password is not None and not local:
            raise ValueError(
                f"email.security is none but email.password is set for {self.host}: the password "
                "would cross the network in clear; use security: starttls or tls"
            )
        if not self.port:
            self.port = PORTS[self.security]
        return self

    @property
    def configured(self) -> bool:
        """A server and a recipient: `guard run` sends mail."""
        return self.host is not None and self.to is not None
