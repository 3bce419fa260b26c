"""The console's paths: its pages (``site``) and its forms (``forms``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from guard.web.console.forms import Forms
from guard.web.console.site import Console

if TYPE_CHECKING:
    from starlette.routing import BaseRoute


def routes(console: Console) -> list[BaseRoute]:
    """``/``, ``/incidents/{id}`` (and its forms), ``/skills``, ``/skills/{name}``,
    ``/monitors``, ``/audit``, ``/silences`` (and its form), ``/login`` and ``/logout``."""
    from starlette.routing import Route

    c, f = console, Forms(console)
    return [
        Route("/", c.overview, methods=["GET"]),
        Route("/incidents/{incident_id:int}", c.incident, methods=["GET"]),
        Route("/incidents/{incident_id:int}/{verb}", f.answer, methods=["POST"]),
        Route("/skills", c.skills, methods=["GET"]),
        Route("/skills/{name}", c.skill, methods=["GET"]),
        Route("/monitors", c.monitors, methods=["GET"]),
        Route("/audit", c.audit, methods=["GET"]),
        Route("/silences", c.silences, methods=["GET"]),
        Route("/silences", f.silence, methods=["POST"]),
        Route("/login", f.login_form, methods=["GET"]),
        Route("/login", f.login, methods=["POST"]),
        Route("/logout", f.logout, methods=["POST"]),
    ]
