"""A real SMTP server on 127.0.0.1 (aiosmtpd), as a relay Guard submits to: STARTTLS with a
generated certificate (or implicit TLS), AUTH PLAIN/LOGIN required after TLS, a recipient it
refuses for good (``REFUSED``), and every mail it accepted kept as parsed ``EmailMessage``s."""

from __future__ import annotations

import email
import email.policy
import logging
import socket
import ssl
import threading
import warnings
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.helpers.certs import make_certs

USER, PASSWORD = "guard", "s3cret-smtp-pass"
FROM, TO = "guard@example.org", "ops@example.org"
REFUSED = "nobody@example.org"
logging.getLogger("mail.log").setLevel(logging.ERROR)  # aiosmtpd's notes on its own deprecations


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Handler:
    def __init__(self, box: MailServer) -> None:
        self.box = box

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if address == REFUSED:
            return "550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self.box.lock:
            self.box.mails.append((list(envelope.rcpt_tos), message))
        return "250 2.0.0 Ok: queued"


class _Controller(Controller):
    def factory(self) -> Any:
        """A session; aiosmtpd counts only STARTTLS as TLS and warns for implicit TLS."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Requiring AUTH while not requiring TLS")
            return super().factory()


class MailServer:
    """``security``: starttls (port 587's way) or tls (465's); ``ca`` verifies it."""

    def __init__(self, folder: Path, security: str = "starttls") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.ca, pem = make_certs(folder, days_left=30)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(pem)
        self.port = _free_port()
        self.security = security
        self.mails: list[tuple[list[str], EmailMessage]] = []
        self.logins: list[tuple[str, bool]] = []
        self.lock = threading.Lock()
        tls = (  # aiosmtpd counts only STARTTLS as TLS for auth_require_tls
            {"ssl_context": self.context, "auth_require_tls": False}
            if security == "tls"
            else {"tls_context": self.context, "require_starttls": True, "auth_require_tls": True}
        )
        self.controller = _Controller(
            _Handler(self),
            hostname="127.0.0.1",
            port=self.port,
            authenticator=self._authenticate,
            auth_required=True,
            ready_timeout=10,
            **tls,  # type: ignore[arg-type]
        )

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        ok = (
            isinstance(data, LoginPassword)
            and data.login.decode() == USER
            and data.password.decode() == PASSWORD
        )
        with self.lock:
            self.logins.append((data.login.decode() if isinstance(data, LoginPassword) else "", ok))
        return AuthResult(success=ok, handled=False)

    def start(self) -> MailServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def settings(self, **extra: Any) -> dict[str, Any]:
        """The ``email:`` section that reaches this server (``ca_file`` trusts its CA)."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "security": self.security,
            "username": USER,
            "password": PASSWORD,
            "from": FROM,
            "to": TO,
            "ca_file": str(self.ca),
            "timeout": "10s",
            **extra,
        }

    def received(self, subject_part: str = "") -> list[EmailMessage]:
        with self.lock:
            return [m for _, m in self.mails if subject_part in str(m["Subject"])]
