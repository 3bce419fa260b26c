"""``notifiers:`` (pagers and webhooks by name) and ``routes:`` (which incident goes where).

```yaml
notifiers:
  pagerduty: {primary: {routing_key: "...", give_up_after: 12h}}
  webhook: {ops: {url: "https://ops.example/hook", hmac_secret: "..."}}
routes:
  - match: {severity: critical}
    chats: {telegram: -1001}
    notify: [pagerduty:primary]
    continue: true
  - {match: {service: shop}, telegram_chat: -1002}   # the older key: chats: {telegram: -1002}
```

A route's ``chats`` names chats per channel (its keys: the channels' sections, checked by
``guard.config.chat.check_route_chats``); a channel it does not name gets its default chat.

A route's ``notify`` names notifiers as ``KIND:NAME``; a name that is not configured is an error
naming the field (``routes[0].notify[1]``) and the notifiers that are. Routing keys and HMAC
secrets are ``SecretStr``: they never print, and ``Settings.secret_values`` masks them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, SecretStr, ValidationInfo, field_validator

from guard.config.validators import INSECURE_HELP, Section, refuse_cleartext
from guard.domain.durations import Duration

PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
SEVERITIES = ("info", "warning", "error", "critical")
GIVE_UP_AFTER = 86400.0  # a day
GIVE_UP_HELP = (
    "a page still failing with a retryable error (429, 5xx, timeout, network) this long after "
    "it was queued is marked failed, logged as an error and audited"
)


class PagerDutyNotifier(Section):
    """A PagerDuty service's Events API v2 integration."""

    routing_key: SecretStr = Field(description="the integration's 32-character routing key")
    allow_insecure_http: bool = Field(default=False, description=INSECURE_HELP)
    url: str = Field(default=PAGERDUTY_URL, description="the Events API v2 enqueue endpoint")
    timeout: Duration = Field(default=10.0, description="per request")
    give_up_after: Duration = Field(default=GIVE_UP_AFTER, description=GIVE_UP_HELP)

    @field_validator("routing_key")
    @classmethod
    def _key_length(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value().strip()) != 32:
            raise ValueError(
                "must be the 32-character routing (integration) key of an Events API v2 "
                "integration; PagerDuty refuses any other"
            )
        return value

    @field_validator("url")
    @classmethod
    def _url_in_clear(cls, value: str, info: ValidationInfo) -> str:
        return refuse_cleartext(value, info, "routing_key")


class WebhookNotifier(Section):
    """A generic signed webhook: JSON body, ``X-Guard-Signature`` HMAC-SHA256 header."""

    url: str = Field(description="where pages are POSTed")
    hmac_secret: SecretStr = Field(description="the shared secret the receiver verifies with")
    timeout: Duration = Field(default=10.0, description="per request")
    give_up_after: Duration = Field(default=GIVE_UP_AFTER, description=GIVE_UP_HELP)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("hmac_secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters (a guessable secret signs nothing)")
        return value


class NotifiersSettings(Section):
    """The pagers and webhooks routes may name, as ``pagerduty:NAME`` and ``webhook:NAME``."""

    pagerduty: dict[str, PagerDutyNotifier] = Field(default_factory=dict)
    webhook: dict[str, WebhookNotifier] = Field(default_factory=dict)

    def names(self) -> list[str]:
        """Every configured notifier as a route names it (``KIND:NAME``)."""
        return [f"pagerduty:{n}" for n in self.pagerduty] + [f"webhook:{n}" for n in self.webhook]

    def get(self, ref: str) -> PagerDutyNotifier | WebhookNotifier | None:
        kind, _, name = ref.partition(":")
        if kind == "pagerduty":
            return self.pagerduty.get(name)
        return self.webhook.get(name) if kind == "webhook" else None

    def secrets(self) -> list[str]:
        """Every routing key and HMAC secret, for redaction."""
        return [p.routing_key.get_secret_value() for p in self.pagerduty.values()] + [
            w.hmac_secret.get_secret_value() for w in self.webhook.values()
        ]


Scalar = str | int
OneOrMany = Scalar | list[Scalar]


class RouteMatch(Section):
    """What an incident must have for a route to take it; every given field must match (a list
    matches any of its values). An empty match takes every incident."""

    severity: OneOrMany | None = None
    playbook: OneOrMany | None = None
    service: OneOrMany | None = None
    kind: OneOrMany | None = None
    labels: dict[str, OneOrMany] | None = Field(
        default=None, description="label name -> value (or values); all must match"
    )

    @field_validator("severity")
    @classmethod
    def _severity(cls, value: OneOrMany | None) -> OneOrMany | None:
        for one in [] if value is None else value if isinstance(value, list) else [value]:
            if str(one) not in SEVERITIES:
                raise ValueError(f"{one!r} is not a severity; one of {', '.join(SEVERITIES)}")
        return value


class Route(Section):
    """Send matching incidents to chats (per channel) and to notifiers."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    match: RouteMatch = Field(default_factory=RouteMatch)
    chats: dict[str, OneOrMany] = Field(
        default_factory=dict,
        description="channel (telegram, ...) -> a chat id, or a list of them "
        "(a channel not named: its default chat)",
    )
    telegram_chat: OneOrMany | None = Field(
        default=None, description="the older spelling of chats: {telegram: ...}"
    )
    notify: list[str] = Field(default_factory=list, description="notifiers, as KIND:NAME")
    continue_: bool = Field(
        default=False,
        alias="continue",
        description="keep looking at the next routes after this one matched (Alertmanager's)",
    )

    def model_post_init(self, _context: object) -> None:
        """``telegram_chat`` is ``chats: {telegram: ...}`` from here on."""
        if self.telegram_chat is not None:
            if "telegram" in self.chats:
                raise ValueError("give telegram_chat or chats.telegram, not both")
            self.chats = {"telegram": self.telegram_chat, **self.chats}

    def chats_in(self, channel: str) -> list[str]:
        """The chats this route names in ``channel`` (none: the channel's default chat)."""
        value = self.chats.get(channel)
        many = value if isinstance(value, list) else [] if value is None else [value]
        return [str(c) for c in many]


def check_routes(routes: list[Route], info: ValidationInfo) -> list[Route]:
    """Every ``notify`` entry names a configured notifier (``notifiers`` is validated first)."""
    notifiers = info.data.get("notifiers")
    known = notifiers.names() if isinstance(notifiers, NotifiersSettings) else []
    for i, route in enumerate(routes):
        for j, ref in enumerate(route.notify):
            if ref not in known:
                have = ", ".join(known) if known else "none are configured under notifiers:"
                raise ValueError(
                    f"routes[{i}].notify[{j}]: unknown notifier {ref!r} (KIND:NAME with KIND "
                    f"pagerduty or webhook); known: {have}"
                )
    return routes


Routes = Annotated[list[Route], AfterValidator(check_routes)]
