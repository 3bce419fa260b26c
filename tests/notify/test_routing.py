"""``routes:`` as Alertmanager routes them, and ``notifiers:`` checked when the config loads."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from guard.config import Settings, load_settings
from guard.domain.exceptions import ConfigError
from guard.notify.routing import Routed, Router, labels_of
from guard.store.correlation import RelatedSignal
from tests.correlation.helpers import related_row
from tests.helpers.agent import new_incident

KEY = "0123456789abcdef0123456789abcdef"
NOTIFIERS = {
    "pagerduty": {"primary": {"routing_key": KEY}, "db-team": {"routing_key": KEY[::-1]}},
    "webhook": {"ops": {"url": "https://ops.example/hook", "hmac_secret": "s" * 20}},
}


def settings(routes: list[dict[str, Any]], **extra: Any) -> Settings:
    return Settings(
        telegram={"bot_token": "1:x", "chat_id": 1001},
        notifiers=NOTIFIERS,
        routes=routes,
        **extra,
    )


ISSUE_ROUTES: list[dict[str, Any]] = [
    {
        "match": {"severity": "critical"},
        "telegram_chat": -1001,
        "notify": ["pagerduty:primary"],
        "continue": True,
    },
    {"match": {"service": "shop"}, "telegram_chat": -1002},
]


@pytest.mark.unit
def test_the_issue_example_critical_goes_on_with_continue_to_the_service_route() -> None:
    router = Router(settings(ISSUE_ROUTES))
    critical_shop = new_incident(severity="critical", details={"service": "shop"})
    routed = router.route(critical_shop)
    assert routed.chats_in("telegram") == ["-1001", "-1002"] and routed.targets == [
        "pagerduty:primary"
    ]
    # a warning on shop: only the service route; not paged
    warning_shop = router.route(new_incident(severity="warning", details={"service": "shop"}))
    assert warning_shop.chats_in("telegram") == ["-1002"] and warning_shop.targets == []
    # critical elsewhere: the first route (continue finds nothing more)
    assert router.route(new_incident(severity="critical")).chats_in("telegram") == ["-1001"]
    # nothing matches: the default chat, no pager
    other = router.route(new_incident(severity="warning", details={"service": "blog"}))
    assert other.chats_in("telegram") == ["1001"] and other.targets == []


@pytest.mark.unit
def test_first_match_wins_without_continue() -> None:
    routes = [
        {"match": {"severity": "critical"}, "telegram_chat": -1001, "notify": ["webhook:ops"]},
        {"match": {"kind": "http_status"}, "telegram_chat": -1003, "notify": ["pagerduty:primary"]},
    ]
    routed = Router(settings(routes)).route(new_incident(severity="critical"))
    assert routed.chats_in("telegram") == ["-1001"] and routed.targets == ["webhook:ops"]
    routed = Router(settings(routes)).route(new_incident(severity="error"))
    assert routed.chats_in("telegram") == ["-1003"] and routed.targets == ["pagerduty:primary"]


@pytest.mark.unit
def test_lists_several_chats_and_a_route_without_chat_uses_the_default() -> None:
    routes: list[dict[str, Any]] = [
        {"match": {"severity": ["critical", "error"]}, "telegram_chat": [-1001, -1004]},
        {"match": {}, "notify": ["webhook:ops"]},
    ]
    router = Router(settings([{**routes[0], "continue": True}, routes[1]]))
    routed = router.route(new_incident(severity="error"))
    assert routed.chats_in("telegram") == ["-1001", "-1004", "1001"] and routed.targets == [
        "webhook:ops"
    ]


@pytest.mark.unit
def test_playbook_and_labels_match() -> None:
    routes: list[dict[str, Any]] = [
        {"match": {"playbook": "databases"}, "telegram_chat": -2001, "continue": True},
        {
            "match": {"labels": {"team": "db", "env": ["prod", "staging"]}},
            "notify": ["pagerduty:db-team"],
        },
    ]
    router = Router(settings(routes))
    books = {"pg": SimpleNamespace(name="databases"), "web": SimpleNamespace(name="web")}
    router.use_books(books)
    assert router.route(new_incident(monitor_id="pg")).chats_in("telegram") == ["-2001"]
    assert router.route(new_incident(monitor_id="web")).chats_in("telegram") == ["1001"]
    books["web"] = SimpleNamespace(name="databases")  # a reload changed the map in place
    assert router.route(new_incident(monitor_id="web")).chats_in("telegram") == ["-2001"]
    # an Alertmanager alert received by an intake source keeps its labels under details.alert
    alert = new_incident(
        monitor_id="intake:am",
        details={"intake": "am", "alert": {"labels": {"team": "db", "env": "prod"}}},
    )
    assert labels_of(alert) == {"team": "db", "env": "prod"}
    assert router.route(alert).targets == ["pagerduty:db-team"]
    dev = new_incident(details={"alert": {"labels": {"team": "db", "env": "dev"}}})
    assert router.route(dev).targets == []
    assert router.route(
        new_incident(details={"labels": {"team": "db", "env": "staging"}})
    ).targets == ["pagerduty:db-team"]


def _load(tmp_path: Path, config: dict[str, Any]) -> Settings:
    path = tmp_path / "guard.yaml"
    path.write_text(yaml.safe_dump(config))
    return load_settings(path)


@pytest.mark.unit
def test_an_unknown_notifier_is_an_error_naming_the_field_and_the_known_ones(
    tmp_path: Path,
) -> None:
    config = {
        "notifiers": NOTIFIERS,
        "routes": [
            {"match": {"severity": "critical"}, "notify": ["pagerduty:primary", "webhook:opz"]}
        ],
    }
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, config)
    text = str(err.value)
    assert "routes[0].notify[1]" in text and "'webhook:opz'" in text
    assert "known: pagerduty:db-team, pagerduty:primary, webhook:ops" in text


@pytest.mark.unit
@pytest.mark.parametrize(
    ("config", "field", "why"),
    [
        (
            {"notifiers": {"pagerduty": {"p": {"routing_key": "short-secret-key"}}}},
            "notifiers.pagerduty.p.routing_key",
            "32-character",
        ),
        (
            {"notifiers": {"webhook": {"w": {"url": "ftp://x", "hmac_secret": "s" * 20}}}},
            "notifiers.webhook.w.url",
            "http",
        ),
        (
            {"notifiers": {"webhook": {"w": {"url": "https://x", "hmac_secret": "short"}}}},
            "notifiers.webhook.w.hmac_secret",
            "16 characters",
        ),
        ({"routes": [{"match": {"severity": "fatal"}}]}, "routes", "not a severity"),
        (
            {"routes": [{"match": {"sevrity": "critical"}}]},
            "routes[0].match.sevrity",
            "unknown field",
        ),
        ({"routes": [{}, {"chats": {"slak": "C1"}}]}, "routes[1].chats.slak", "not a chat channel"),
        (
            {"routes": [{"telegram_chat": -1, "chats": {"telegram": -2}}]},
            "routes[0]",
            "give telegram_chat or chats.telegram, not both",
        ),
        (
            {
                "notifiers": {
                    "pagerduty": {"p": {"routing_key": KEY, "url": "http://pd.example/v2/enqueue"}}
                }
            },
            "notifiers.pagerduty.p.url",
            "in clear",
        ),
    ],
)
def test_bad_notifier_and_route_config_is_refused_naming_the_field(
    tmp_path: Path, config: dict[str, Any], field: str, why: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, config)
    text = str(err.value)
    assert field in text and why in text, text
    assert "short-secret-key" not in text  # a secret never reaches an error message


@pytest.mark.unit
def test_routing_keys_and_hmac_secrets_are_masked_everywhere() -> None:
    s = settings(ISSUE_ROUTES)
    assert KEY in s.secret_values() and "s" * 20 in s.secret_values()
    assert KEY not in repr(s) and KEY not in s.model_dump_json()


@pytest.mark.unit
def test_an_incident_goes_wherever_each_of_its_related_signals_would_alone() -> None:
    """Security review #39 item 3: a joined signal is never quieter than it was alone."""
    routes: list[dict[str, Any]] = [
        {"match": {"kind": "http_status"}, "notify": ["pagerduty:db-team"], "continue": True},
        {
            "match": {"severity": "critical"},
            "telegram_chat": -1001,
            "notify": ["pagerduty:primary"],
        },
        {"match": {"labels": {"team": "ops"}}, "notify": ["webhook:ops"]},
        {"match": {"severity": "warning"}, "telegram_chat": -1009},
    ]
    router = Router(settings(routes))
    root = new_incident(severity="warning", kind="bad_input", details={"service": "shop"})
    assert router.route(root) == Routed({"telegram": ["-1009"]}, [])
    http = related_row(1, "shop-http", "http://shop/", service="shop")
    alert = RelatedSignal.model_validate(
        http.model_dump()
        | {"kind": "alert", "severity": "info", "details": {"labels": {"team": "ops"}}}
    )
    routed = router.route(root, [http, alert])
    # a route without a chat names the default one (the HTTP check's first, the alert's)
    assert routed.chats_in("telegram") == ["-1009", "1001", "-1001"]
    assert routed.targets == ["pagerduty:db-team", "pagerduty:primary", "webhook:ops"]


@pytest.mark.unit
def test_routes_name_chats_per_channel_and_telegram_chat_means_chats_telegram() -> None:
    old = Router(settings(ISSUE_ROUTES))
    new_routes = [
        {k: v for k, v in r.items() if k != "telegram_chat"}
        | {"chats": {"telegram": r["telegram_chat"]}}
        for r in ISSUE_ROUTES
    ]
    new = Router(settings(new_routes))
    for incident in (
        new_incident(severity="critical", details={"service": "shop"}),
        new_incident(severity="warning", details={"service": "shop"}),
        new_incident(severity="warning"),
    ):
        assert old.route(incident) == new.route(incident)
    routed = new.route(new_incident(severity="critical", details={"service": "shop"}))
    assert routed.chats == {"telegram": ["-1001", "-1002"]}
    assert routed.chats_in("telegram") == ["-1001", "-1002"] and routed.chats_in("slack") == []


@pytest.mark.unit
def test_a_route_resolves_its_chat_for_each_channel_and_a_channel_it_does_not_name_gets_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two channels configured (the second one the test suite's): each gets the chats the
    route names for it, or its own default chat."""
    from guard.config.chat import ChatSection
    from guard.notify import kinds

    class Room(ChatSection):
        pass

    class TwoChannels(Settings):
        room: Room = Room(chat_id="ops-room")

    monkeypatch.setitem(kinds.CHANNELS, "room", kinds.ChannelKind(Room, "tests.notify"))
    routes = [
        {"match": {"service": "shop"}, "chats": {"telegram": -1002, "room": ["shop", "ops"]}},
        {"match": {"severity": "critical"}, "chats": {"room": "oncall"}},
    ]
    router = Router(TwoChannels(telegram={"bot_token": "1:x", "chat_id": 1001}, routes=routes))
    shop = router.route(new_incident(details={"service": "shop"}))
    assert shop.chats == {"telegram": ["-1002"], "room": ["shop", "ops"]}
    critical = router.route(new_incident(severity="critical"))
    assert critical.chats == {"telegram": ["1001"], "room": ["oncall"]}
    other = router.route(new_incident(severity="warning"))
    assert other.chats == {"telegram": ["1001"], "room": ["ops-room"]}
    with pytest.raises(ValueError, match=r"routes\[0\]\.chats\.rooom"):
        TwoChannels(routes=[{"chats": {"rooom": "x"}}])
