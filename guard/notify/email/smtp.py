"""One SMTP exchange (the standard library's ``smtplib``, in a thread): connect with STARTTLS,
implicit TLS or none, log in, send one mail to one address, and the server's answers as the
Channel port's errors.

- a refused login is an ``Unreachable`` that names ``email.password``: nothing is lost, the
  outbox keeps the mail and tries again until the password is fixed;
- a permanent refusal of the recipient or the mail (5xx) is ``Rejected``: recorded on the row
  as failed, never retried; a temporary one (4xx) is ``Retry`` after a minute;
- a connection that never opened is ``Unreachable`` and certain; one that broke after the mail
  was handed over (between the end of DATA and the server's reply) is uncertain.

Tested by tests/notify/email/test_email_channel.py.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

from guard.config.email import EmailSettings
from guard.notify.channel import Rejected, Retry, Unreachable

TEMPORARY_WAIT = 60.0


def context(settings: EmailSettings) -> ssl.SSLContext:
    """Verify the server's certificate and name, against ``ca_file`` or the system's CAs."""
    return ssl.create_default_context(cafile=settings.ca_file)


def _connect(settings: EmailSettings) -> smtplib.SMTP:
    assert settings.host is not None
    if settings.security == "tls":
        return smtplib.SMTP_SSL(
            settings.host, settings.port, timeout=settings.timeout, context=context(settings)
        )
    client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
    if settings.security == "starttls":
        client.starttls(context=context(settings))
    return client


def _login(client: smtplib.SMTP, settings: EmailSettings) -> None:
    if settings.username is None or settings.password is None:
        return
    try:
        client.login(settings.username, settings.password.get_secret_value())
    except smtplib.SMTPAuthenticationError as exc:
        raise Unreachable(
            f"{settings.host} refused the login of email.username {settings.username!r} "
            f"({exc.smtp_code}): check email.password (GUARD_EMAIL__PASSWORD)",
            uncertain=False,
        ) from exc
    except smtplib.SMTPNotSupportedError as exc:
        raise Unreachable(
            f"{settings.host} offers no AUTH on this connection: check email.security "
            "(most servers offer it only after starttls)",
            uncertain=False,
        ) from exc


def _refused(code: int, why: object, to: str) -> Exception:
    text = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
    if 400 <= code < 500:
        return Retry(TEMPORARY_WAIT, f"{to}: {code} {text} (temporary)")
    return Rejected(f"{to}: {code} {text}")


def send(settings: EmailSettings, message: EmailMessage, to: str) -> None:
    """Send ``message`` to ``to`` (blocking: run it in a thread)."""
    handed_over = False
    try:
        with _connect(settings) as client:
            _login(client, settings)
            assert settings.from_ is not None
            handed_over = True  # from here a broken connection may have delivered it
            client.send_message(message, settings.from_, [to])
    except smtplib.SMTPRecipientsRefused as exc:
        code, why = exc.recipients.get(to, (550, b"refused"))
        raise _refused(code, why, to) from exc
    except smtplib.SMTPResponseException as exc:  # MAIL FROM or DATA refused, or a 4xx
        raise _refused(exc.smtp_code, exc.smtp_error, to) from exc
    except ssl.SSLError as exc:
        raise Unreachable(
            f"TLS with {settings.host}:{settings.port} failed ({exc}): check email.security "
            "and email.ca_file",
            uncertain=False,
        ) from exc
    except (TimeoutError, smtplib.SMTPServerDisconnected, OSError) as exc:
        raise Unreachable(
            f"{settings.host}:{settings.port}: {exc or type(exc).__name__}",
            uncertain=handed_over,
        ) from exc
