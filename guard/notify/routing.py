"""Which chats and which pagers an incident goes to (``routes:``), as Alertmanager routes.

Routes are tried in order; the first that matches takes the incident, unless it says
``continue: true``, and then the next matching routes add their chats and notifiers too. A
matching route without ``telegram_chat`` sends to the default chat (``telegram.chat_id``). No
route matches: the default chat, and no pager.

A route's ``match`` fields all have to match (a list: any of its values):
- ``severity``: the incident's severity;
- ``playbook``: the name of the playbook whose monitor opened it;
- ``service``: ``Incident.details["service"]`` (the monitor's ``service:``);
- ``kind``: the incident's kind (``container_exited``, ``http_status``, ...);
- ``labels``: the labels of the alert an intake source received (Alertmanager's, Grafana's),
  ``details["labels"]`` or ``details["alert"]["labels"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guard.config import Settings
from guard.config.paging import OneOrMany, Route, RouteMatch
from guard.store.models import Incident


@dataclass(frozen=True)
class Routed:
    """Where one incident goes: chat ids (strings) and notifiers (``KIND:NAME``)."""

    chats: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


def labels_of(incident: Incident) -> dict[str, str]:
    """An incident's labels, wherever its source put them (empty if it has none)."""
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
        default = settings.telegram.chat_id if settings.telegram.configured else None
        self.default_chats = [str(default)] if default is not None else []
        self.playbook_of = playbook_of or (lambda _monitor_id: None)

    def use_books(self, books: Mapping[str, Any]) -> None:
        """Name playbooks from ``books`` (monitor id -> playbook with a ``name``), read at each
        routing: a mapping updated in place on a reload stays current."""
        self.playbook_of = lambda monitor_id: getattr(books.get(monitor_id), "name", None)

    def matches(self, match: RouteMatch, incident: Incident) -> bool:
        details = incident.details or {}
        if not (
            _any(match.severity, incident.severity)
            and _any(match.kind, incident.kind)
            and _any(match.service, details.get("service"))
        ):
            return False
        if match.playbook is not None and not _any(
            match.playbook, self.playbook_of(incident.monitor_id)
        ):
            return False
        if match.labels:
            have = labels_of(incident)
            return all(_any(want, have.get(name)) for name, want in match.labels.items())
        return True

    def route(self, incident: Incident) -> Routed:
        chats: list[str] = []
        targets: list[str] = []
        matched = False
        for r in self.routes:
            if not self.matches(r.match, incident):
                continue
            matched = True
            chats += r.chats() or self.default_chats
            targets += r.notify
            if not r.continue_:
                break
        if not matched:
            chats = list(self.default_chats)
        return Routed(list(dict.fromkeys(chats)), list(dict.fromkeys(targets)))
