"""Alert intake over HTTP: ``POST /hooks/<id>`` for the ``intake:`` sources (Alertmanager,
Grafana, any JSON webhook); served by ``guard.web.server``, stored through
``guard.triage.queue``."""

from guard.hooks.endpoint import Hooks

__all__ = ["Hooks"]
