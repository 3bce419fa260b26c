"""Guard's web console: server-rendered pages (Jinja2, no JavaScript) on Guard's HTTP server.

``routes(Console(runtime, gate, tokens))`` are added to the Starlette app of ``guard.web.server`` by
the wiring layer (``guard.app``), which also passes the gate and the token store: this package
reads the store and queues human commands through ``guard.incidents``, and knows no channel.
docs/WEB.md describes the pages, the sign-in and the forms.
"""

from guard.web.console.routes import routes
from guard.web.console.signin import Tokens, Who
from guard.web.console.site import Console

__all__ = ["Console", "Tokens", "Who", "routes"]
