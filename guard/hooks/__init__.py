"""Alert intake over HTTP: ``POST /hooks/<id>`` for the ``intake:`` sources (Alertmanager,
Grafana, any JSON webhook); served by ``guard.web``, stored through ``guard.intake``."""

from guard.hooks.endpoint import Hooks

__all__ = ["Hooks"]
