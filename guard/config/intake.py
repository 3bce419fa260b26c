"""The ``intake:`` section: alert sources that POST to ``/hooks/<id>`` (``guard.hooks``).

Each source names its payload ``type``, how it authenticates (a bearer ``token`` or an HMAC
signature) and how an alert maps to Guard's fields: Jinja2 templates over the alert for
``alertmanager`` and ``grafana``, JMESPath expressions over the body for ``webhook``. Templates
and expressions are compiled here, so ``guard check-config`` names a broken one by its field
(``intake[2].kind: ...``). Jinja2 and JMESPath are imported only when a source is configured.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from guard.domain.durations import Duration
from guard.domain.records import Severity
from guard.util.plainhttp import cleartext_host

IntakeType = Literal["alertmanager", "grafana", "webhook"]
IntakeGroupBy = Literal["alert", "rule", "template"] | list[str]

# What an alert's severity label says, in Guard's terms (anything else: default_severity).
SEVERITIES: dict[str, Severity] = {
    "critical": Severity.critical,
    "fatal": Severity.critical,
    "emergency": Severity.critical,
    "page": Severity.critical,
    "high": Severity.error,
    "error": Severity.error,
    "major": Severity.error,
    "warning": Severity.warning,
    "warn": Severity.warning,
    "medium": Severity.warning,
    "minor": Severity.warning,
    "info": Severity.info,
    "low": Severity.info,
    "none": Severity.info,
    "notice": Severity.info,
}

# Per type: kind, target, severity, message (templates for alerts, JMESPath for webhook).
ALERT_DEFAULTS = {
    "kind": "{{ labels.alertname }}",
    "target": "{{ labels.instance or labels.job or labels.alertname }}",
    "severity": "{{ labels.severity }}",
    "message": "{{ annotations.summary or annotations.description or labels.alertname }}",
}
WEBHOOK_DEFAULTS = {"severity": "severity", "message": "message", "status": "status"}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|sec|second|m|min|minute)\s*$")
MIN_SECRET = 16  # characters of a token or hmac_secret
_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def parse_rate(value: str) -> float:
    """``"50/s"`` or ``"600/m"`` -> requests per second."""
    found = _RATE.match(value)
    if found is None or float(found.group(1)) <= 0:
        raise ValueError(f"rate {value!r}: write N/s or N/m, e.g. 50/s")
    per = 1.0 if found.group(2).startswith("s") else 60.0
    return float(found.group(1)) / per


def compile_template(text: str) -> Any:
    """A Jinja2 template (sandboxed; a missing label renders empty)."""
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    try:
        return SandboxedEnvironment(autoescape=False).from_string(text)
    except TemplateSyntaxError as exc:
        raise ValueError(f"template {text!r}: {exc.message}") from None


def compile_jmespath(text: str) -> Any:
    import jmespath
    from jmespath.exceptions import JMESPathError, ParseError

    try:
        return jmespath.compile(text)
    except JMESPathError as exc:
        where = getattr(exc, "lex_position", None)
        if type(exc).__name__.startswith("Incomplete"):
            what = "incomplete expression"
        elif isinstance(exc, ParseError):
            what = str(exc.msg)
        else:
            what = str(exc).splitlines()[0]
        at = f" at column {where}" if isinstance(where, int) else ""
        raise ValueError(f"JMESPath {text!r}: {what}{at}") from None


@dataclass(frozen=True)
class IntakeKind:
    """One payload ``type``: how its fields are written and what its body carries.

    ``compile``: a field's text as given (Jinja2 template or JMESPath) -> its compiled form.
    ``defaults``: the fields a source may leave out. ``alerts``: the body is a list of
    ``alerts`` (Alertmanager's shape, which Grafana shares), else one event. ``version``: the
    ``version`` such a body must carry, if any. ``requires``: fields a source must give.
    ``event_fields``: fields only an event's source may give. ``episodes``: each alert carries
    its own start (``startsAt``), so a replayed ``resolved`` is told from a new one."""

    name: str
    title: str  # as its sender calls itself
    compile: Callable[[str], Any]
    defaults: Mapping[str, str]
    alerts: bool
    version: str | None = None
    requires: tuple[str, ...] = ()
    event_fields: tuple[str, ...] = ()
    episodes: bool = True


INTAKE_KINDS: dict[str, IntakeKind] = {
    k.name: k
    for k in (
        IntakeKind(
            "alertmanager", "Alertmanager", compile_template, ALERT_DEFAULTS, True, version="4"
        ),
        IntakeKind("grafana", "Grafana", compile_template, ALERT_DEFAULTS, True),
        IntakeKind(
            "webhook",
            "a JSON webhook",
            compile_jmespath,
            WEBHOOK_DEFAULTS,
            alerts=False,
            requires=("kind", "target"),
            episodes=False,
        ),
    )
}
"""The payload types (``IntakeType`` lists the same names: ``tests/contracts``)."""
EVENT_FIELDS = ("status", "dedup_key")  # what only an event's JMESPath can give


class IntakeSource(BaseModel):
    """One alert source, served at ``POST /hooks/<id>``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_ID, description="the hook's path: POST /hooks/<id>")
    type: IntakeType
    token: SecretStr | None = Field(
        default=None, description="the sender's Authorization: Bearer credential"
    )
    hmac_secret: SecretStr | None = Field(
        default=None, description="key of the hex sha256 HMAC of the raw body (hmac_header)"
    )
    hmac_header: str | None = Field(
        default=None, description="the header carrying the signature (an optional sha256= prefix)"
    )
    hmac_timestamp_header: str | None = Field(
        default=None,
        description="the header carrying the Unix time the sender signed (HMAC of <ts>:<body>)",
    )
    replay_window: Duration = Field(
        default=300.0,
        gt=0,
        description="how far a signed timestamp may be from now; a signature is taken once in it",
    )
    allow_insecure_http: bool = False
    alertmanager_url: str | None = Field(
        default=None, description="Alertmanager's API, for verification by the source"
    )
    verify_within: Duration = Field(
        default=300.0, description="how long a remedy waits for the alert to resolve"
    )
    kind: str | None = None
    target: str | None = None
    severity: str | None = None
    message: str | None = None
    status: str | None = Field(default=None, description="webhook: JMESPath to firing/resolved")
    dedup_key: str | None = Field(default=None, description="webhook: JMESPath to the alert's id")
    default_severity: Severity = Severity.error
    group_by: IntakeGroupBy = Field(
        default="alert",
        description="which alerts are one incident: alert (one per alert, default), rule (one "
        "per kind and target), template (the message's template) or a list of label names",
    )
    rate: str = Field(
        default="50/s", description="alerts per second (averaged) past which a request gets 429"
    )
    burst: int = Field(default=500, ge=1, description="alerts let in at once above the rate")

    @field_validator("token", "hmac_secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_SECRET:
            raise ValueError(
                f"must be at least {MIN_SECRET} characters (a guessable credential guards "
                "nothing); e.g. `openssl rand -hex 32`"
            )
        return value

    @field_validator("alertmanager_url")
    @classmethod
    def _url_in_clear(cls, value: str | None, info: ValidationInfo) -> str | None:
        host = cleartext_host(value)
        if value is None or host is None or info.data.get("allow_insecure_http"):
            return value
        if urlsplit(value).password is None:
            return value
        raise ValueError(
            f"plain http to {host} would send the password in the URL in clear; use https, or "
            "set allow_insecure_http: true on this source on a network you trust"
        )

    @field_validator("kind", "target", "severity", "message", "status", "dedup_key")
    @classmethod
    def _compiles(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = INTAKE_KINDS.get(str(info.data.get("type")))
        if value is not None and kind is not None:
            kind.compile(value)
        return value

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        parse_rate(value)
        return value

    @model_validator(mode="after")
    def _complete(self) -> IntakeSource:
        if self.token is None and self.hmac_secret is None:
            raise ValueError(
                f"intake source {self.id!r} has no authentication: set token (Authorization: "
                "Bearer) or hmac_secret and hmac_header"
            )
        if (self.hmac_secret is None) != (self.hmac_header is None):
            raise ValueError("hmac_secret and hmac_header go together")
        if self.hmac_timestamp_header is not None and self.hmac_secret is None:
            raise ValueError("hmac_timestamp_header: only with hmac_secret and hmac_header")
        kind = self.kind_of()
        for name in kind.requires:
            if getattr(self, name) is None:
                raise ValueError(f"{name}: a {kind.name} source needs a JMESPath for it")
        if kind.alerts:
            for name in EVENT_FIELDS:
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: only for type webhook")
        return self

    def kind_of(self) -> IntakeKind:
        """This source's payload type (``INTAKE_KINDS``)."""
        return INTAKE_KINDS[self.type]

    def field_sources(self) -> dict[str, str]:
        """Each mapped field's template (alerts) or JMESPath (webhook), defaults filled in."""
        defaults = dict(self.kind_of().defaults)
        names = ("kind", "target", "severity", "message", "status", "dedup_key")
        given = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        return defaults | given

    def secrets(self) -> list[str]:
        return [s.get_secret_value() for s in (self.token, self.hmac_secret) if s is not None]


def replay_warnings(sources: list[IntakeSource]) -> list[str]:
    """Sources whose replayed ``resolved`` Guard cannot tell from a new one: a webhook signed
    over its body alone, with no ``dedup_key`` either. Grafana and Alertmanager carry each
    alert's ``startsAt``, so their episodes are told apart without a signed time."""
    return [
        f"intake[{i}] ({s.id}): signed without hmac_timestamp_header and grouped without "
        "dedup_key: a captured `resolved` sent again later can end a newer incident of the "
        "same kind and target. Set hmac_timestamp_header if the sender signs a time (see "
        "docs/INTAKE.md, Replays), or dedup_key to the alert's id"
        for i, s in enumerate(sources)
        if not s.kind_of().episodes
        and s.hmac_secret is not None
        and s.hmac_timestamp_header is None
        and s.dedup_key is None
    ]


def check_sources(sources: list[IntakeSource]) -> list[IntakeSource]:
    """The ``intake`` list's check: every id once."""
    seen: set[str] = set()
    for source in sources:
        if source.id in seen:
            raise ValueError(f"id {source.id!r} is used by two intake sources")
        seen.add(source.id)
    return sources
