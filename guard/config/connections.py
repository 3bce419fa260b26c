"""The sections of the services Guard talks to: Telegram, Railway, Kubernetes, model endpoints."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from guard.config.chat import ChatSection
from guard.config.mcp_servers import McpServerSettings, check_names
from guard.config.validators import INSECURE_HELP, Section, refuse_cleartext
from guard.domain.durations import Duration


class TelegramSettings(ChatSection):
    bot_token: SecretStr | None = None
    chat_id: int | str | None = None
    allowed_user_ids: list[int] = Field(default_factory=list)
    # before api_base_url, like bot_token: its check reads them
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    api_base_url: str = "https://api.telegram.org"
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = Field(default=None, description="public https URL (webhook mode)")
    listen: str = "0.0.0.0"
    port: int = Field(default=8443, ge=1, le=65535, description="webhook listen port")
    poll_timeout: Duration = Field(default=10.0, description="getUpdates long-polling timeout")
    mute_for: Duration = Field(default=3600.0, description="how long the mute button mutes")
    group_wait: Duration = Field(
        default=10.0,
        description="incidents announced within this long of the last "
        "announcement go out together, as one message with a line per incident (0: never)",
    )

    @field_validator("api_base_url")
    @classmethod
    def _api_in_clear(cls, value: str, info: ValidationInfo) -> str:
        return refuse_cleartext(value, info, "bot_token")

    @property
    def configured(self) -> bool:
        """A token and a chat: the gateway runs and incidents go to Telegram."""
        return self.bot_token is not None and self.chat_id is not None


class RailwaySettings(Section):
    token: SecretStr | None = None
    project_token: SecretStr | None = None
    # before api_url, like the tokens: its check reads them
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    api_url: str = "https://backboard.railway.com/graphql/v2"
    project_id: str | None = Field(default_factory=lambda: os.environ.get("RAILWAY_PROJECT_ID"))
    environment_id: str | None = Field(
        default_factory=lambda: os.environ.get("RAILWAY_ENVIRONMENT_ID")
    )
    max_requests_per_hour: int = 1000
    max_requests_per_second: float = 10.0
    timeout: Duration = 15.0  # per request
    retries: int = Field(default=3, ge=0, description="retries after a 5xx, 429 or timeout")
    backoff: Duration = 0.5  # first retry delay; doubles each retry

    @field_validator("api_url")
    @classmethod
    def _api_in_clear(cls, value: str, info: ValidationInfo) -> str:
        return refuse_cleartext(value, info, "token", "project_token")


class KubernetesSettings(Section):
    kubeconfig: Path | None = None  # default: $KUBECONFIG or ~/.kube/config
    context: str | None = None
    in_cluster: bool | None = None  # None: in-cluster when KUBERNETES_SERVICE_HOST is set
    allow_insecure_http: bool = Field(
        default=False,
        description="let the kubeconfig's credentials go to a plain http API server that is "
        "not loopback (only on a network you trust; otherwise Guard refuses to connect)",
    )
    timeout: Duration = 15.0  # per request (watches use a longer read timeout)


class EndpointSettings(Section):
    """One model endpoint: ``llm`` itself, or one of its ``fallback`` list."""

    provider: Literal["none", "openai", "anthropic"] = "none"
    model: str | None = None
    # api_key and allow_insecure_http come before base_url: its check reads them
    api_key: SecretStr | None = Field(
        default=None, description="sent as Bearer (openai) or x-api-key (anthropic)"
    )
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    base_url: str | None = Field(
        default=None,
        description="default: the provider's public API "
        "(https://api.openai.com/v1, https://api.anthropic.com/v1)",
    )
    timeout: Duration = Field(default=60.0, description="per request")
    retries: int = Field(default=3, ge=0, description="retries after a 429 or 5xx")
    backoff: Duration = Field(
        default=1.0, description="first retry delay (doubles); a 429's Retry-After wins"
    )

    @field_validator("base_url")
    @classmethod
    def _api_in_clear(cls, value: str | None, info: ValidationInfo) -> str | None:
        return refuse_cleartext(value, info, "api_key")

    @model_validator(mode="after")
    def _model_named(self) -> EndpointSettings:
        if self.provider != "none" and not self.model:
            raise ValueError(f"llm.model is required with llm.provider: {self.provider}")
        return self


class LLMSettings(EndpointSettings):
    """Optional model-driven diagnosis (docs/DIAGNOSIS.md); ``provider: none`` turns it off."""

    fallback: list[EndpointSettings] = Field(
        default_factory=list,
        description="endpoints tried in order when one fails (after its "
        "retries on 429/5xx, at once on 401/403/404), at most once per turn",
    )
    max_steps: int = Field(
        default=12,
        ge=1,
        description="model turns per investigation; the last one is offered no tools",
    )
    max_tokens: int = Field(
        default=60000,
        ge=1000,
        description="token budget per incident (prompt + completion, summed over turns)",
    )
    max_wall: Duration = Field(default=300.0, description="wall-clock budget per incident")
    max_output_tokens: int = Field(default=1024, ge=64, description="per model reply")
    tool_result_chars: int = Field(
        default=4000,
        ge=200,
        description="a tool result is cut to this many characters (the model is told)",
    )
    context_chars: int = Field(
        default=48000, ge=2000, description="past this, older tool results are compacted"
    )
    mcp_servers: dict[str, McpServerSettings] = Field(
        default_factory=dict,
        description="MCP servers whose allowed tools join the investigation (deny by default)",
    )

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        check_names(value)
        return value

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    def endpoints(self) -> list[EndpointSettings]:
        """The primary endpoint, then the fallbacks (each configured one)."""
        primary = EndpointSettings.model_validate(
            self.model_dump(include=set(EndpointSettings.model_fields))
        )
        return [e for e in [primary, *self.fallback] if e.provider != "none"]
