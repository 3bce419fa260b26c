"""The root model: top-level fields, one nested section each, and the sources read."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from guard.config.chat import (
    ChatSettings,
    ConsoleSettings,
    check_route_chats,
    use_chat_settings,
)
from guard.config.compose import ComposeSettings
from guard.config.connections import (
    KubernetesSettings,
    LLMSettings,
    RailwaySettings,
    TelegramSettings,
)
from guard.config.credentials import basic_credentials
from guard.config.email import EmailSettings
from guard.config.escalation import Escalation, EscalationSettings, QuietHours
from guard.config.hosts import HostSettings, check_hosts, key_values
from guard.config.intake import IntakeSource, check_sources
from guard.config.matrix import MatrixSettings
from guard.config.operations import (
    AgentSettings,
    HASettings,
    MemorySettings,
    ReportSettings,
    SandboxSettings,
    SchedulerSettings,
    StoreSettings,
    TriageSettings,
)
from guard.config.paging import NotifiersSettings, Routes
from guard.config.probes import ProbesSettings
from guard.config.safety import AccessSettings, AuditSettings, RedactSettings
from guard.config.skills import SkillsSettings
from guard.config.slack import SlackSettings
from guard.config.sources import (
    check_public_url,
    default_data_dir,
    default_http_port,
    shipped_skills,
)
from guard.domain.durations import Duration

# the YAML file ``load_settings`` is reading, for ``settings_customise_sources``
yaml_path: ContextVar[Path | None] = ContextVar("guard_yaml_path", default=None)


class Settings(BaseSettings):
    """The root of Guard's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="GUARD_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = Field(default_factory=lambda: default_data_dir())
    database_url: str = ""  # empty: SQLite (WAL) at data_dir/guard.db
    playbooks_dir: Path = Path("./playbooks")
    playbooks_watch_every: Duration = Field(
        default=5.0,
        description="how often `guard run` looks for edited playbooks and applies them; an "
        "invalid edit keeps the last good config and opens a playbook_invalid incident (0: never)",
    )
    skills_dir: Path = Field(
        default=Path(),
        description="where learned skills are written and committed (a git repository of its "
        "own); default: data_dir/skills, never the source checkout",
    )
    builtin_skills_dir: Path | None = Field(
        default=None,
        description="the starter skills, read only, beneath skills_dir (a skill of the same "
        "name in skills_dir wins); default: the checkout's skills/ when skills_dir is left at "
        "its default (a configured skills_dir is the whole library, as before)",
    )
    loop_stall_warning: Duration = Field(
        default=5.0,
        description="when `guard run`'s event loop (every check, every message) has not run "
        "for this long, log where it is stuck, once per stall (0: never)",
    )
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"
    http_host: str = Field(
        default="127.0.0.1",
        description="the address `guard run` serves /healthz, /readyz, /metrics, the hooks and "
        "the console on: loopback, unless told otherwise (0.0.0.0: every interface; the image "
        "sets GUARD_HTTP_HOST=0.0.0.0 so its published port reaches it)",
    )
    http_port: int = Field(default_factory=default_http_port, ge=0, le=65535)  # 0: any free
    public_url: str | None = Field(
        default=None,
        description="where people reach this Guard's web console (https://guard.example.com): "
        "questions and pages then link to <public_url>/incidents/N",
    )
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    email: EmailSettings = Field(default_factory=EmailSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    matrix: MatrixSettings = Field(default_factory=MatrixSettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    chat: ChatSettings = Field(
        default_factory=ChatSettings,
        description="what means the same on every chat channel; a channel's own section "
        "overrides it (docs/CHANNELS.md)",
    )
    railway: RailwaySettings = Field(default_factory=RailwaySettings)
    kubernetes: KubernetesSettings = Field(default_factory=KubernetesSettings)
    compose: ComposeSettings = Field(default_factory=ComposeSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    probes: ProbesSettings = Field(default_factory=ProbesSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    triage: TriageSettings = Field(default_factory=TriageSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    redact: RedactSettings = Field(default_factory=RedactSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)
    ha: HASettings = Field(default_factory=HASettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    notifiers: NotifiersSettings = Field(default_factory=NotifiersSettings)  # before routes
    routes: Routes = Field(default_factory=list, description="which incident goes where")
    escalation: Escalation = Field(default_factory=EscalationSettings)
    quiet_hours: QuietHours | None = None
    intake: list[IntakeSource] = Field(
        default_factory=list, description="alert sources served at POST /hooks/<id>"
    )
    hosts: dict[str, HostSettings] = Field(default_factory=dict, description="docs/HOSTS.md")

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: dict[str, HostSettings]) -> dict[str, HostSettings]:
        return check_hosts(value)

    @field_validator("intake")
    @classmethod
    def _intake_ids(cls, value: list[IntakeSource]) -> list[IntakeSource]:
        return check_sources(value)

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        return check_public_url(value)

    @model_validator(mode="after")
    def _route_chats(self) -> Settings:
        check_route_chats(self)  # every channel section is known now, a subclass's too
        return self

    @model_validator(mode="after")
    def _chat(self) -> Settings:
        use_chat_settings(self)  # each channel reads chat.X unless its own section sets X
        return self

    @model_validator(mode="after")
    def _default_paths(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'guard.db'}"
        if "skills_dir" not in self.model_fields_set:
            self.skills_dir = self.data_dir / "skills"
            if "builtin_skills_dir" not in self.model_fields_set:
                self.builtin_skills_dir = shipped_skills()
        return self

    def incident_url(self, incident_id: int) -> str:
        """The console page of an incident, for messages and pages; "" without ``public_url``."""
        return f"{self.public_url}/incidents/{incident_id}" if self.public_url else ""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = yaml_path.get()
        if path is not None:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)

    def secret_values(self) -> list[str]:
        """Every configured secret's value, for redaction from logs and messages."""
        found = [
            s.get_secret_value()
            for s in (
                self.telegram.bot_token,
                self.email.password,
                self.slack.bot_token,
                self.slack.app_token,
                self.slack.signing_secret,
                self.matrix.access_token,
                self.railway.token,
                self.railway.project_token,
                self.llm.api_key,
                self.audit.key,
                self.skills.git_token,
                *(f.api_key for f in self.llm.fallback),
            )
            if s is not None
        ]
        found += [v for source in self.intake for v in source.secrets()]
        found += self.notifiers.secrets()
        found += key_values(self.hosts, Path(self.data_dir))
        for server in self.llm.mcp_servers.values():  # those set (a missing one is reported)
            found += server.credential_values()
        if self.skills.git_token is not None:  # as git sends it, too
            found.append(basic_credentials(self.skills.git_token.get_secret_value()))
        return [v for v in found if len(v) >= 4]
