"""Safe output (issue 13, finding 8): text from logs reaches a terminal or Telegram without its
control sequences, and is never read as markup."""

from __future__ import annotations

from guard.domain.records import utcnow
from guard.notify.telegram.messages import esc
from guard.store.models import IncidentTimeline
from guard.util.textsafe import printable
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident

TITLE = "api error [/x] on [bold]/srv/api.log[/]"
MESSAGE = "ERROR \x1b]0;pwned\x07\x1b[2J\x1b[H cleared \u202eevil\x9b31m"


def _hostile_incident(home: GuardHome) -> None:
    now = utcnow()
    with home.database().session() as s:
        inc = stored_incident(
            s,
            monitor_id="m",
            source="logfile",
            target="/srv/api.log",
            kind="api_error",
            severity="error",
            title=TITLE,
            message=MESSAGE,
            at=now,
        )
        s.add(IncidentTimeline(incident_id=inc.id, type="opened", message=MESSAGE, at=now))


def test_incidents_show_and_list_print_data_not_escapes_or_markup(home: GuardHome) -> None:
    _hostile_incident(home)
    shown = home.cli("incidents", "show", "1")  # a title with [/x] crashed Rich before
    listed = home.cli("incidents", "list")
    for text in (shown.stdout, listed.stdout):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
        assert "\u202e" not in text
    assert TITLE in shown.stdout  # shown as written, not interpreted
    assert "cleared" in shown.stdout


def test_telegram_text_loses_control_characters() -> None:
    assert esc(MESSAGE) == printable(MESSAGE).replace("&", "&amp;")
    assert "\x1b" not in esc(MESSAGE) and "<b>" not in esc("<b>x</b>")
    assert printable("a\tb\nc") == "a\tb\nc"
