"""Guard's settings: one pydantic-settings root with one nested model per subsystem.

Sources, strongest first: environment variables ``GUARD_<FIELD>`` (``__`` nests:
``GUARD_TELEGRAM__BOT_TOKEN``), then the YAML file (``--config`` or ``GUARD_CONFIG``), then
defaults. Secrets are ``SecretStr`` so they never print. Relative paths are relative to the
working directory.
"""

from __future__ import annotations

import base64
import os
import re
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from guard.durations import Duration
from guard.exceptions import ConfigError
from guard.intake_config import IntakeSource, check_sources
from guard.plainhttp import cleartext_host
from guard.validation import format_validation_error

_yaml_path: ContextVar[Path | None] = ContextVar("guard_yaml_path", default=None)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


_INSECURE_HELP = (
    "send this section's credential over plain http to a host that is not loopback "
    "(only on a network you trust; otherwise Guard refuses to load)"
)
_URL = TypeVar("_URL", str, str | None)


def refuse_cleartext(url: _URL, info: ValidationInfo, *secrets: str) -> _URL:
    """A URL field's check: refuse it when it is plain http off this machine and the section
    sends a credential to it (one of the fields ``secrets``, declared before it, or a password
    in the URL itself), unless the section's ``allow_insecure_http`` (declared before it too)."""
    host = cleartext_host(url)
    if url is None or host is None or info.data.get("allow_insecure_http"):
        return url
    sent = [name for name in secrets if info.data.get(name) is not None]
    if not sent and urlsplit(url).password is None:
        return url
    raise ValueError(
        f"plain http to {host} would send {' and '.join(sent) or 'the password in the URL'} "
        "in clear; use https, or set allow_insecure_http: true in this section on a network "
        "you trust (loopback hosts: localhost, 127.0.0.0/8, ::1, are always allowed)"
    )


class TelegramSettings(_Section):
    bot_token: SecretStr | None = None
    chat_id: int | str | None = None
    allowed_user_ids: list[int] = Field(default_factory=list)
    # before api_base_url, like bot_token: its check reads them
    allow_insecure_http: bool = Field(default=False, description=_INSECURE_HELP)
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


class ReportSettings(_Section):
    cron: str = Field(default="0 9 * * *", description="when the daily report is sent (crontab)")
    timezone: str = "UTC"

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(f"report.cron {value!r}: five crontab fields, e.g. '0 9 * * *'")
        return value

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(value)
        except Exception:
            raise ValueError(f"report.timezone {value!r}: not a known time zone") from None
        return value


class RailwaySettings(_Section):
    token: SecretStr | None = None
    project_token: SecretStr | None = None
    # before api_url, like the tokens: its check reads them
    allow_insecure_http: bool = Field(default=False, description=_INSECURE_HELP)
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


class KubernetesSettings(_Section):
    kubeconfig: Path | None = None  # default: $KUBECONFIG or ~/.kube/config
    context: str | None = None
    in_cluster: bool | None = None  # None: in-cluster when KUBERNETES_SERVICE_HOST is set
    allow_insecure_http: bool = Field(
        default=False,
        description="let the kubeconfig's credentials go to a plain http API server that is "
        "not loopback (only on a network you trust; otherwise Guard refuses to connect)",
    )
    timeout: Duration = 15.0  # per request (watches use a longer read timeout)


class SandboxSettings(_Section):
    backend: Literal["docker", "local"] = "docker"
    image: str = "guard-toolbox:latest"
    memory: str = "256m"
    cpus: float = 1.0
    pids: int = 128
    timeout: Duration = 60.0
    output_limit: int = Field(default=65536, ge=1024, description="bytes kept per stream")
    tmpfs_size: str = Field(default="64m", description="size cap of /tmp and /workspace each")
    user: str = Field(default="65534:65534", description="uid:gid commands run as (never root)")

    @field_validator("user")
    @classmethod
    def _not_root(cls, value: str) -> str:
        """``uid[:gid]``, each a number or a name; numbers are read as numbers (``00`` is 0)."""
        parts = value.split(":")
        if len(parts) > 2 or not all(re.fullmatch(r"[0-9]+|[a-z_][a-z0-9_-]*", p) for p in parts):
            raise ValueError(f"sandbox.user {value!r}: use uid[:gid], e.g. 65534:65534")
        if any(p == "root" or (p.isdigit() and int(p) == 0) for p in parts):
            raise ValueError(
                f"sandbox.user {value!r}: commands must not run as root (uid or gid 0)"
            )
        return value

    @field_validator("memory", mode="before")
    @classmethod
    def _memory_size(cls, value: object) -> object:
        """What docker-py's ``parse_bytes`` takes (bytes, or b/k/m/g), at least the engine's 6m."""

        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # plain bytes
        if not isinstance(value, str):
            return value  # pydantic reports the type
        found = re.fullmatch(r"(\d+(?:\.\d+)?)([bkmg])?b?", value.strip(), re.IGNORECASE)
        if found is None:
            raise ValueError(
                f"sandbox.memory {value!r}: not a Docker memory size; a number of bytes or one "
                "with a unit b, k, m or g, e.g. '256m' or '1g'"
            )
        size = float(found[1]) * 1024 ** "bkmg".index((found[2] or "b").lower())
        if size < 6 * 1024 * 1024:
            raise ValueError(f"sandbox.memory {value!r}: below Docker's minimum of 6m; e.g. '256m'")
        return value.strip()

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, value: float) -> float:
        most = (os.cpu_count() or 1) * 4
        if not 0.01 <= value <= most:
            raise ValueError(
                f"sandbox.cpus {value}: must be from 0.01 to {most} (4 x this machine's "
                f"{os.cpu_count() or 1} CPUs; the engine itself refuses more than its host has), "
                "e.g. 1.0"
            )
        return value

    @field_validator("pids")
    @classmethod
    def _pids(cls, value: int) -> int:
        if value < 8:
            raise ValueError(
                f"sandbox.pids {value}: at least 8 (docker-init, the idle process, the shell and "
                "the command's own children all count); e.g. 128"
            )
        return value


class EndpointSettings(_Section):
    """One model endpoint: ``llm`` itself, or one of its ``fallback`` list."""

    provider: Literal["none", "openai", "anthropic"] = "none"
    model: str | None = None
    # api_key and allow_insecure_http come before base_url: its check reads them
    api_key: SecretStr | None = Field(
        default=None, description="sent as Bearer (openai) or x-api-key (anthropic)"
    )
    allow_insecure_http: bool = Field(default=False, description=_INSECURE_HELP)
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

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    def endpoints(self) -> list[EndpointSettings]:
        """The primary endpoint, then the fallbacks (each configured one)."""
        primary = EndpointSettings.model_validate(
            self.model_dump(include=set(EndpointSettings.model_fields))
        )
        return [e for e in [primary, *self.fallback] if e.provider != "none"]


class TriageSettings(_Section):
    auto_resolve: bool = True
    flap_window: Duration = 600.0
    flap_threshold: int = Field(default=3, ge=1)
    max_new_incidents: int = Field(
        default=20,
        ge=1,
        description="new incidents one monitor may open per storm_window; "
        "beyond that its signals fold into one storm incident",
    )
    storm_window: Duration = Field(
        default=300.0,
        description="the storm breaker's window; a storm resolves after one window without signals",
    )


class SkillsSettings(_Section):
    learned_trust: Literal["trusted", "approval"] = Field(
        default="trusted", description="whether a learned skill runs unasked next time"
    )
    git_commit: bool = Field(default=True, description="commit learned skills to git")
    git_author: str = "Guard <guard@localhost>"
    git_branch: str = Field(default="main", description="the reviewed branch Guard runs from")
    git_token: SecretStr | None = Field(
        default=None,
        description="for http(s) remotes and the forge API; never written to .git/config or shown",
    )
    # git_token and allow_insecure_http come before git_remote: its check reads them
    allow_insecure_http: bool = Field(default=False, description=_INSECURE_HELP)
    git_remote: str | None = Field(
        default=None,
        description="https, ssh or file URL the skills repository is cloned from and pushed to "
        "(or http: with git_token, only to a loopback host or with allow_insecure_http)",
    )
    review: Literal["direct", "branch", "pr"] | None = Field(
        default=None,
        description="direct: push to git_branch, trusted at once; branch "
        "(default with a remote): push to guard/learned/<name>, under review until it is on "
        "git_branch; pr: branch plus a pull/merge request",
    )
    sync_every: Duration = Field(
        default=60.0,
        description="how often `guard run` fetches git_branch and fast-forwards (0: never)",
    )
    forge: Literal["github", "gitlab", "gitea"] | None = Field(
        default=None, description="the forge's API for review: pr (default: from the host)"
    )
    forge_api_url: str | None = Field(
        default=None,
        description="the forge's REST API base URL "
        "(default: https://api.github.com, <host>/api/v4 or "
        "<host>/api/v1)",
    )

    @field_validator("git_remote")
    @classmethod
    def _remote(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        scp_like = re.fullmatch(r"[\w.-]+@[\w.-]+:[^/].*", value)
        scheme = urlsplit(value).scheme
        if not scp_like and scheme not in ("https", "http", "ssh", "file"):
            raise ValueError(
                f"skills.git_remote {value!r}: use an https, http, ssh or file URL, e.g. "
                "https://github.com/acme/guard-skills.git (skills.git_token goes over http only "
                "to a loopback host, or with skills.allow_insecure_http: true)"
            )
        if scheme in ("https", "http") and urlsplit(value).password is not None:
            raise ValueError(
                f"skills.git_remote: the {scheme} URL holds a password or token; put it in "
                "skills.git_token (GUARD_SKILLS__GIT_TOKEN) so it never lands in "
                ".git/config"
            )
        return refuse_cleartext(value, info, "git_token")

    @field_validator("forge_api_url")
    @classmethod
    def _forge_in_clear(cls, value: str | None, info: ValidationInfo) -> str | None:
        return refuse_cleartext(value, info, "git_token")

    @field_validator("git_branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        if (
            not re.fullmatch(r"[A-Za-z0-9._/-]+", value)
            or value.startswith(("-", "/"))
            or ".." in value
            or value.endswith((".lock", "/"))
        ):
            raise ValueError(f"skills.git_branch {value!r}: not a valid branch name, e.g. main")
        return value

    @model_validator(mode="after")
    def _review_default(self) -> SkillsSettings:
        if self.review is None:
            self.review = "branch" if self.git_remote else "direct"
        elif self.review != "direct" and not self.git_remote:
            raise ValueError(
                f"skills.review {self.review!r} needs skills.git_remote (a "
                "reviewer works on a remote); set it, or use review: direct"
            )
        if self.review != "direct" and not self.git_commit:
            raise ValueError(f"skills.review {self.review!r} needs skills.git_commit: true")
        return self


class MemorySettings(_Section):
    isolate: bool = Field(
        default=True,
        description="keep LanceDB (~150 MB) in a helper process "
        "that runs only while recalls happen",
    )
    idle_timeout: Duration = Field(
        default=600.0, description="the helper process leaves after this long without a recall"
    )


class AgentSettings(_Section):
    enabled: bool = True
    max_concurrent_incidents: int = Field(default=4, ge=1)
    max_concurrent_remediations: int = Field(default=2, ge=1)
    breaker_failures: int = Field(
        default=2, ge=1, description="failed runs in a row that disable a skill for a target"
    )
    approval_ttl: Duration = 1800.0
    verify_timeout: Duration = 60.0
    fix_timeout: Duration = 120.0
    poll_interval: Duration = 1.0


class ExtraPatternSettings(_Section):
    pattern: str = Field(description="a regex; its first group, if any, is the secret")
    kind: str = Field(default="custom", description="the placeholder's name: [REDACTED:<kind>]")

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        return _valid_regex("", value, secret=True)

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        import re

        if not re.fullmatch(r"[a-z]+(?:-[a-z]+)*", value):
            raise ValueError(f"{value!r}: lower-case letters and dashes only, e.g. 'acme-api-key'")
        return value


def _valid_regex(where: str, value: str, *, secret: bool = False) -> str:
    import re

    try:
        compiled = re.compile(value)
    except re.error as exc:
        raise ValueError(f"{where}{value!r}: not a valid regex ({exc})") from None
    if secret and compiled.match(""):
        raise ValueError(
            f"{where}{value!r}: matches the empty string, so it would redact "
            "nothing useful; e.g. 'acme_[A-Za-z0-9]{32}'"
        )
    return value


class RedactSettings(_Section):
    extra_patterns: list[ExtraPatternSettings] = Field(
        default_factory=list, description="more secret shapes: a regex, or {pattern, kind}"
    )
    allow: list[str] = Field(
        default_factory=list,
        description="regexes: a match found in one of these is not a secret (false positives)",
    )

    @field_validator("extra_patterns", mode="before")
    @classmethod
    def _plain_strings(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"pattern": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str]) -> list[str]:
        return [_valid_regex(f"[{i}] ", v) for i, v in enumerate(value)]


class SchedulerSettings(_Section):
    max_concurrent_checks: int = Field(
        default=64,
        ge=1,
        description="monitor checks running at once; a check due while all "
        "run waits, and guard_check_lag_seconds shows how long",
    )


class StoreSettings(_Section):
    retention: Duration = Field(
        default=90 * 86400.0,
        description="resolved incidents (with their timelines, signals "
        "and conversation) older than this are pruned daily; 0: keep everything",
    )


class AuditSettings(_Section):
    anchor_every: Duration = Field(
        default=3600.0,
        description="how often `guard run` appends "
        "the chain's head to data_dir/audit-anchors.jsonl (0: never)",
    )
    key: SecretStr | None = Field(
        default=None,
        description="HMAC key: entries written with it cannot be recomputed without it",
    )

    @field_validator("key")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("at least 16 characters (e.g. `openssl rand -hex 32`)")
        return value


class HASettings(_Section):
    """Replicas on one Postgres ``database_url`` elect a leader (see ``guard.cluster``), by a
    lease row in that database or, with ``backend: kubernetes``, by a Kubernetes Lease."""

    enabled: bool = Field(
        default=True,
        description="elect a leader when the database is "
        "Postgres (SQLite: the one process is always the leader)",
    )
    lease_ttl: Duration = Field(
        default=15.0,
        gt=1.0,
        description="how long a leader's lease "
        "lasts unrenewed; a standby takes over after it runs out",
    )
    replica_id: str = Field(default="", description="this replica's name (default: HOSTNAME:pid)")
    backend: Literal["database", "kubernetes"] = Field(
        default="database",
        description="where the election happens: a row in the shared database, or a "
        "coordination.k8s.io Lease (the fencing token is still enforced in the database)",
    )
    lease_name: str = Field(
        default="guard-leader",
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="the Lease object's name, a DNS subdomain (backend: kubernetes)",
    )
    namespace: str = Field(
        default="",
        max_length=63,
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
        description="the Lease's namespace (backend: kubernetes; default: the pod's own, "
        "from its service account)",
    )


def _default_http_port() -> int:
    return int(os.environ.get("PORT") or 8080)


def _default_data_dir() -> Path:
    return Path(os.environ.get("RAILWAY_VOLUME_MOUNT_PATH") or "./data")


class Settings(BaseSettings):
    """The root of Guard's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="GUARD_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str = ""  # empty: SQLite (WAL) at data_dir/guard.db
    playbooks_dir: Path = Path("./playbooks")
    playbooks_watch_every: Duration = Field(
        default=5.0,
        description="how often `guard run` looks for edited playbooks and applies them; an "
        "invalid edit keeps the last good config and opens a playbook_invalid incident (0: never)",
    )
    skills_dir: Path = Path("./skills")
    loop_stall_warning: Duration = Field(
        default=5.0,
        description="when `guard run`'s event loop (every check, every message) has not run "
        "for this long, log where it is stuck, once per stall (0: never)",
    )
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"
    http_host: str = "0.0.0.0"  # where `guard run` serves /healthz, /readyz, /metrics
    http_port: int = Field(default_factory=_default_http_port, ge=0, le=65535)  # 0: any free
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    railway: RailwaySettings = Field(default_factory=RailwaySettings)
    kubernetes: KubernetesSettings = Field(default_factory=KubernetesSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    triage: TriageSettings = Field(default_factory=TriageSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    redact: RedactSettings = Field(default_factory=RedactSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    ha: HASettings = Field(default_factory=HASettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    intake: list[IntakeSource] = Field(
        default_factory=list, description="alert sources served at POST /hooks/<id>"
    )

    @field_validator("intake")
    @classmethod
    def _intake_ids(cls, value: list[IntakeSource]) -> list[IntakeSource]:
        return check_sources(value)

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'guard.db'}"
        return self

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
        path = _yaml_path.get()
        if path is not None:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)

    def secret_values(self) -> list[str]:
        """Every configured secret's value, for redaction from logs and messages."""
        found = [
            s.get_secret_value()
            for s in (
                self.telegram.bot_token,
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
        if self.skills.git_token is not None:  # as git sends it, too
            found.append(basic_credentials(self.skills.git_token.get_secret_value()))
        return [v for v in found if len(v) >= 4]


GIT_USER = "x-access-token"  # GitHub's name for a token used as a password; GitLab and Gitea
# accept any user name with a token


def basic_credentials(token: str) -> str:
    """The ``Authorization: Basic`` value git sends for ``skills.git_token``."""
    return base64.b64encode(f"{GIT_USER}:{token}".encode()).decode()


def config_path(explicit: str | Path | None) -> Path | None:
    """The YAML file to read: ``--config``, else ``GUARD_CONFIG``, else ``./guard.yaml`` if any."""
    if explicit:
        return Path(explicit)
    if env := os.environ.get("GUARD_CONFIG"):
        return Path(env)
    default = Path("guard.yaml")
    return default if default.is_file() else None


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings from ``path`` (see ``config_path``) and the environment.

    Raises ``ConfigError`` whose problems name the file and the field.
    """
    yaml_file = config_path(path)
    label = str(yaml_file) if yaml_file else "environment"
    if yaml_file is not None and not yaml_file.is_file():
        raise ConfigError([f"{yaml_file}: config file not found (pass --config or GUARD_CONFIG)"])
    token = _yaml_path.set(yaml_file)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(label, exc)) from None
    except Exception as exc:  # YAML syntax errors surface from the source
        raise ConfigError([f"{label}: {exc}"]) from None
    finally:
        _yaml_path.reset(token)
