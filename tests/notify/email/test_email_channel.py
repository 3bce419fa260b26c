"""Email against a real SMTP server on 127.0.0.1 (aiosmtpd: STARTTLS with a generated
certificate, AUTH required): a question and the daily report arrive once each, with a link to
the console; a closed question is a follow-up in its thread; a route names an address; a wrong
password names ``email.password`` and loses nothing; a refused recipient is recorded as failed,
not retried."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import Settings
from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.channel import Post, Unreachable
from guard.notify.email import plug
from guard.notify.email.channel import EmailChannel
from guard.notify.email.notifier import EmailNotifier
from guard.notify.email.runner import EmailRunner
from guard.notify.outbox import queue
from guard.notify.routing import Router
from guard.notify.runner import ChannelRunner
from guard.notify.sync import Sync
from guard.store.db import Database
from guard.store.models import (
    ChannelMessage,
    Incident,
    IncidentState,
    OutboxMessage,
    OutboxStatus,
)
from tests.helpers.agent import new_incident, stored_incident
from tests.helpers.mailserver import FROM, REFUSED, TO, MailServer
from tests.notify.email.conftest import PUBLIC_URL, settings_for

OTHER = "db-team@example.org"


def incident(db: Database, **fields: object) -> int:
    with db.session() as s:
        inc = stored_incident(s, "awaiting_human", **fields)
        assert inc.id is not None
        return int(inc.id)


def request(incident_id: int, url: str = "") -> HumanRequest:
    option = SkillOption("web-fix", "restart the web", f"a{incident_id:021d}")
    return HumanRequest(
        incident_id, "web is down", "critical", "http://svc", 1, "", [option], url=url
    )


async def deliver(settings: Settings, db: Database, within: float = 30) -> None:
    """What ``guard run`` does for email (``ChannelRunner``), until its outbox is empty."""
    runner = ChannelRunner(EmailChannel(settings.email, db), db, EmailNotifier(settings, db))
    stop = asyncio.Event()
    await runner.start(stop)
    try:
        for _ in range(int(within * 10)):
            if not queue.pending(db, "email"):
                return
            await asyncio.sleep(0.1)
        raise AssertionError("email's outbox did not empty")
    finally:
        stop.set()
        await runner.wait()


async def test_a_question_arrives_once_with_a_link_to_the_console(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd)
    inc = incident(db)
    await EmailNotifier(settings, db).ask(request(inc, settings.incident_url(inc)))
    await deliver(settings, db)
    await deliver(settings, db)  # a second run finds nothing left to send
    [mail] = smtpd.received()
    assert mail["From"] == FROM and mail["To"] == TO
    assert mail["Subject"].startswith(f"[Guard] Incident #{inc} [critical]")
    body = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert f"Answer in the console: {PUBLIC_URL}/incidents/{inc}" in body
    assert "web-fix: restart the web" in body
    assert smtpd.logins == [("guard", True)]  # after STARTTLS (the server refuses AUTH before)
    with db.session() as s:
        [stored] = s.exec(select(ChannelMessage).where(ChannelMessage.channel == "email")).all()
    assert stored.incident_id == inc and stored.role == "incident"


async def test_a_closed_question_is_a_follow_up_in_its_thread(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd)
    inc = incident(db)
    notifier = EmailNotifier(settings, db)
    await notifier.ask(request(inc))
    await deliver(settings, db)
    await notifier.update(IncidentUpdate(inc, "web is down", "resolved", "Healed by web-fix."))
    await deliver(settings, db)
    question, *after = smtpd.received()
    assert after and all(m["In-Reply-To"] == question["Message-ID"] for m in after)
    assert all(m["Subject"] == f"Re: {question['Subject']}" for m in after)
    closing = after[0].get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Resolved" in closing and "Healed by web-fix." in closing
    ids = [m["Message-ID"] for m in smtpd.received()]
    assert len(set(ids)) == len(ids)


async def test_the_daily_report_is_one_mail_with_its_chart(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd)
    said = plug.report(
        settings, db, "Incidents opened: 3\n<b>Resolved</b>: 2", b"\x89PNG fake chart"
    )
    assert TO in said
    await deliver(settings, db)
    [mail] = smtpd.received()
    assert mail["Subject"] == "[Guard] Incidents opened: 3"
    body = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Resolved: 2" in body and f"Console: {PUBLIC_URL}/" in body
    [chart] = list(mail.iter_attachments())
    assert chart.get_content_type() == "image/png"
    assert chart.get_content() == b"\x89PNG fake chart"


async def test_a_route_names_an_address(tmp_path: Path, smtpd: MailServer, db: Database) -> None:
    settings = settings_for(tmp_path, smtpd)
    settings.routes = [
        Settings.model_validate(
            {"routes": [{"match": {"severity": "critical"}, "email": OTHER}]}
        ).routes[0]
    ]
    critical, warning = incident(db, severity="critical"), incident(db, severity="warning")
    notifier = EmailNotifier(settings, db, Router(settings))
    await notifier.ask(request(critical))
    await notifier.ask(request(warning))
    await deliver(settings, db)
    # by incident, the questions and any follow-up on them (a reply, "Re: [Guard] Incident #N"
    # ..., once seen on a loaded machine): each goes where its incident's route says
    to = {(m["Subject"].removeprefix("Re: ").split(" [")[0], m["To"]) for m in smtpd.received()}
    assert to == {(f"[Guard] Incident #{critical}", OTHER), (f"[Guard] Incident #{warning}", TO)}


async def test_a_wrong_password_names_email_password_and_loses_nothing(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd, password="wrong")
    await EmailNotifier(settings, db).send_text("hello")
    runner = ChannelRunner(EmailChannel(settings.email, db), db, EmailNotifier(settings, db))
    stop = asyncio.Event()
    await runner.start(stop)
    await asyncio.sleep(1.5)
    stop.set()
    await runner.wait()
    [row] = queue.pending(db, "email")
    assert "email.password" in row.error and "wrong" not in row.error
    assert row.status == OutboxStatus.pending and not smtpd.received()
    fixed = settings_for(tmp_path, smtpd)  # the password fixed: it goes out, once
    await deliver(fixed, db)
    assert [m["Subject"] for m in smtpd.received()] == ["[Guard] hello"]


async def test_a_refused_recipient_is_recorded_not_retried(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd, to=REFUSED)
    await EmailNotifier(settings, db).send_text("to nobody")
    await deliver(settings, db)
    await deliver(settings, db)
    with db.session() as s:
        [row] = s.exec(select(OutboxMessage)).all()
    assert row.status == OutboxStatus.failed and row.attempts == 1
    assert "550" in row.error and "User unknown" in row.error
    assert len(smtpd.logins) == 1 and not smtpd.received()


async def test_implicit_tls(tmp_path: Path, db: Database) -> None:
    server = MailServer(tmp_path / "certs", security="tls").start()
    try:
        settings = settings_for(tmp_path, server)
        await EmailNotifier(settings, db).send_text("over TLS")
        await deliver(settings, db)
        assert [m["Subject"] for m in server.received()] == ["[Guard] over TLS"]
    finally:
        server.stop()


async def test_the_scheduled_report_renders_plain_text_with_the_chart(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    """What ``report.cron`` runs in ``guard run``: today's report from the store, as one mail."""
    settings = settings_for(tmp_path, smtpd)
    incident(db)
    await EmailRunner(settings, db).send_report()
    await deliver(settings, db)
    [mail] = smtpd.received()
    body = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Incidents opened: 1" in body and "<b>" not in body
    [chart] = list(mail.iter_attachments())
    assert chart.get_content().startswith(b"\x89PNG")


async def test_a_log_line_cannot_add_headers(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd)
    await EmailNotifier(settings, db).send_text("disk full\r\nBcc: thief@example.net\r\n\r\nhi")
    await deliver(settings, db)
    [(to, mail)] = smtpd.mails
    assert to == [TO] and mail["Bcc"] is None and mail["Subject"] == "[Guard] disk full"


async def test_a_question_answered_elsewhere_is_closed_by_a_follow_up(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    """Answered in the console (or on another channel), the incident moves on: the mail's
    sync closes the question with a follow-up in its thread, once."""
    settings = settings_for(tmp_path, smtpd)
    inc = incident(db)
    notifier = EmailNotifier(settings, db)
    await notifier.ask(request(inc))
    await deliver(settings, db)
    with db.session() as s:
        stored = s.get(Incident, inc)
        assert stored is not None
        stored.state = IncidentState.resolved
        s.add(stored)
    markup = EmailChannel(settings.email, db).markup
    for _ in range(2):  # a second pass finds nothing left to close
        Sync(db, "email", TO, notifier.closed_text, markup).once()
        await deliver(settings, db)
    question, closing = smtpd.received()
    assert closing["In-Reply-To"] == question["Message-ID"]
    assert "Resolved" in closing.get_body(("plain",)).get_content()  # type: ignore[union-attr]


def test_each_channel_routes_to_its_own_chats(tmp_path: Path, smtpd: MailServer) -> None:
    """With Telegram and email both configured, a route's chats are per channel: Telegram never
    gets an address, email never a Telegram chat (nor the other's default)."""
    settings = Settings.model_validate(
        {
            "data_dir": tmp_path,
            "telegram": {"bot_token": "123:abc", "chat_id": -1001},
            "email": smtpd.settings(),
            "routes": [
                {"match": {"severity": "critical"}, "telegram_chat": -1002, "email": OTHER},
                {"match": {"severity": "warning"}, "telegram_chat": -1003},
            ],
        }
    )
    router = Router(settings)
    critical = new_incident(severity="critical")
    warning = new_incident(severity="warning")
    assert router.route(critical).chats_in("telegram") == ["-1002"]
    assert router.route(critical).chats_in("email") == [OTHER]
    assert router.route(warning).chats_in("telegram") == ["-1003"]
    assert router.route(warning).chats_in("email") == [TO]  # no address named: email.to


async def test_a_server_whose_certificate_is_not_trusted_gets_no_password(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    settings = settings_for(tmp_path, smtpd, ca_file=None)  # the system's CAs: not the test CA
    with pytest.raises(Unreachable, match=r"email\.ca_file") as refused:
        await EmailChannel(settings.email, db).post(Post(TO, "hello"))
    assert not refused.value.uncertain
    assert smtpd.logins == [] and not smtpd.received()  # no AUTH went to it


async def test_find_adopts_only_a_mail_the_outbox_never_stored(
    tmp_path: Path, smtpd: MailServer, db: Database
) -> None:
    """Message-IDs have no order: a crashed post is told from an earlier mail of the same
    text by the outbox not having stored it."""
    settings = settings_for(tmp_path, smtpd)
    await EmailNotifier(settings, db).send_text("disk full")
    await deliver(settings, db)  # sent and stored
    channel = EmailChannel(settings.email, db)
    assert await channel.find(Post(TO, "[Guard] ignored", []), 0, 0) is None
    assert await channel.find(Post(TO, "disk full"), 0, 0) is None  # that one is stored
    cut_short = await channel.post(Post(TO, "disk full"))  # taken, never stored
    assert await channel.find(Post(TO, "disk full"), 0, 0) == cut_short
    assert [m["Message-ID"] for m in smtpd.received()][-1] == cut_short
