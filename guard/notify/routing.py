"""Which chats and which pagers an incident goes to (``routes:``), as Alertmanager routes.

Routes are tried in order; the first that matches takes the incident, unless it says
``continue: true``, and then the next matching routes add their chats and notifiers too. A
route names chats per channel (``chats: {<channel>: ...}``); in a channel a matching route does
not name, it sends to that channel's default chat (its ``chat_id``; the channels are
``guard.notify.kinds.CHANNELS``). No route matches: each channel's default chat, and no pager.

A route's ``match`` fields all have to match (a list: any of its values):
- ``severity``: the incident's severity;
- ``playbook``: the name of the playbook whose monitor opened it;
- ``service``: ``Incident.details["service"]`` (the monitor's ``service:``);
- ``kind``: the incident's kind (``container_exited``, ``http_status``, ...);
- ``labels``: the labels of the alert an intake source received (Alertmanager's, Grafana's),
  ``details["labels"]`` or ``details["alert"]["labels"]``.

An incident with related signals (``guard.triage.correlation``) is routed as itself (its
severity is the worst of its signals') and as each related signal alone (its severity, kind,
monitor's service and playbook, labels), and goes where any of them would: a signal that joined
an incident is never quieter than it would have been on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from guard.config import Settings
from guard.config.paging import OneOrMany, Route, RouteMatch
from guard.notify.kinds import active, section
from guard.store.correlation import RelatedSignal
from guard.store.db import Database
from guard.store.models import Incident


@dataclass(frozen=True)
class Routed:
    """Where one incident goes: chat ids (strings) per channel, and notifiers (``KIND:NAME``)."""

    chats: dict[str, list[str]] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)

    def chats_in(self, channel: str) -> list[str]:
        """The chats of ``channel`` the incident goes to."""
        return self.chats.get(channel, [])


@dataclass(frozen=True)
class Facet:
    """What a route matches on: an incident's, or one of its related signals'."""

    severity: str
    kind: str
    service: str | None
    monitor_id: str
    labels: dict[str, str]


def labels_of(incident: Incident | RelatedSignal) -> dict[str, str]:
    """An incident's (or a signal's) labels, wherever its source put them (empty if none)."""
    details = incident.details or {}
    found = details.get("labels")
    if not isinstance(found, dict):
        alert = details.get("alert")
        found = alert.get("labels") if isinstance(alert, dict) else None
    if not isinstance(found, dict):
        return {}
    return {str(k): str(v) for k, v in found.items()}


def _any(wanted: OneOrMany | None, value: object) -> bool:
    """``wanted`` unset, or ``value`` equal (as text) to it or to one of its list."""
    if wanted is None:
        return True
    if value is None:
        return False
    options = wanted if isinstance(wanted, list) else [wanted]
    return str(value) in {str(o) for o in options}


class Router:
    """Routes incidents by ``settings.routes``; ``playbook_of(monitor_id)`` names the playbook
    a monitor belongs to (None: none, e.g. an intake source's)."""

    def __init__(
        self,
        settings: Settings,
        playbook_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.routes: list[Route] = list(settings.routes)
        self.default_chats = {
            name: [str(section(settings, name).chat_id)] for name in active(settings)
        }
        self.playbook_of = playbook_of or (lambda _monitor_id: None)

    def use_books(self, books: Mapping[str, Any]) -> None:
        """Name playbooks from ``books`` (monitor id -> playbook with a ``name``), read at each
        routing: a mapping updated in place on a reload stays current."""
        self.playbook_of = lambda monitor_id: getattr(books.get(monitor_id), "name", None)

    def matches(self, match: RouteMatch, incident: Incident | Facet) -> bool:
        f = incident if isinstance(incident, Facet) else facets(incident)[0]
        if not (
            _any(match.severity, f.severity)
            and _any(match.kind, f.kind)
            and _any(match.service, f.service)
        ):
            return False
        if match.playbook is not None and not _any(match.playbook, self.playbook_of(f.monitor_id)):
            return False
        if match.labels:
            return all(_any(want, f.labels.get(name)) for name, want in match.labels.items())
        return True

    def route(self, incident: Incident, related: Sequence[RelatedSignal] = ()) -> Routed:
        """Where ``incident`` goes: with its ``related`` signals, wherever any would alone."""
        chats: dict[str, list[str]] = {name: [] for name in self.default_chats}
        targets: list[str] = []
        for facet in facets(incident, related):
            routed = self._route(facet)
            for name, found in routed.chats.items():
                chats[name] += found
            targets += routed.targets
        unique = {name: list(dict.fromkeys(found)) for name, found in chats.items()}
        return Routed(unique, list(dict.fromkeys(targets)))

    def _route(self, facet: Facet) -> Routed:
        chats: dict[str, list[str]] = {name: [] for name in self.default_chats}
        targets: list[str] = []
        matched = False
        for r in self.routes:
            if not self.matches(r.match, facet):
                continue
            matched = True
            for name, default in self.default_chats.items():
                chats[name] += r.chats_in(name) or default
            targets += r.notify
            if not r.continue_:
                break
        if not matched:
            chats = {name: list(default) for name, default in self.default_chats.items()}
        return Routed(chats, targets)


def chats_for(router: Router | None, db: Database, channel: str) -> Callable[[Incident], list[str]]:
    """For a channel's notifier: the chats of ``channel`` an incident's question goes to, its
    related signals' routes included (none without a router: the channel's default chat)."""
    from guard.triage.correlation import related_of

    def chats(incident: Incident) -> list[str]:
        if router is None or incident.id is None:
            return []
        with db.session() as session:
            related = related_of(session, incident.id)
        return router.route(incident, related).chats_in(channel)

    return chats


def facets(incident: Incident, related: Sequence[RelatedSignal] = ()) -> list[Facet]:
    """The incident as routes see it, then each of its related signals alone."""
    service = (incident.details or {}).get("service")
    own = Facet(
        incident.severity,
        incident.kind,
        service if isinstance(service, str) else None,
        incident.monitor_id,
        labels_of(incident),
    )
    return [own] + [
        Facet(r.severity, r.kind, r.service, r.monitor_id, labels_of(r)) for r in related
    ]
