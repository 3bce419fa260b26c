"""``bench.crash``'s email scenario: Guard asks by mail through a real SMTP server on
127.0.0.1 (aiosmtpd: STARTTLS with a generated certificate, AUTH), the daily report is queued
(``guard report daily``), the service recovers and the question's follow-up goes out in its
thread; Guard is killed after the server took a mail, before Guard recorded it. The check: every
mail arrived once (no Message-ID twice, no content twice)."""

from __future__ import annotations

from collections import Counter
from email.message import EmailMessage

from bench.crash_checks import audit_check, stuck_check, telegram_config, web_playbook
from bench.crash_run import Check, Run, Scenario
from tests.helpers.mailserver import MailServer

PUBLIC_URL = "https://guard.example.com"


def _body(mail: EmailMessage) -> str:
    part = mail.get_body(("plain",))
    return "" if part is None else str(part.get_content())


def mail_check(box: MailServer) -> Check:
    """One question, one report, and no mail twice (by Message-ID or by content)."""
    mails = box.received()
    ids = Counter(str(m["Message-ID"]) for m in mails)
    contents = Counter((str(m["Subject"]).strip(), _body(m)) for m in mails)
    questions = [m for m in mails if str(m["Subject"]).strip().startswith("[Guard] Incident #")]
    reports = [m for m in mails if any(True for _ in m.iter_attachments())]
    twice = [k for k, n in ids.items() if n > 1] + [k[0] for k, n in contents.items() if n > 1]
    ok = not twice and len(questions) == 1 and len(reports) == 1
    return ok, (
        f"{len(mails)} mail(s) {[str(m['Subject']).strip()[:40] for m in mails]}: "
        f"{len(questions)} question(s), {len(reports)} report(s)"
        + (f"; twice: {twice[0][:80]!r}" if twice else ", none twice")
    )


class Email(Scenario):
    name = "email"
    what = (
        "a critical HTTP check fails, no skill: Guard asks by mail (STARTTLS and AUTH to a local "
        "SMTP server); `guard report daily` queues the report; the service recovers, the "
        "incident auto-resolves and a follow-up goes out in the question's thread"
    )
    points = (
        "outbox.sent_before_id",  # the question taken by the server, its id not stored
        "report.sent_before_mark",  # the report taken, not marked sent
        "outbox.edited_before_mark",  # the closing follow-up taken, its row not marked sent
    )

    def setup(self, run: Run) -> None:
        run.notes["mail"] = box = MailServer(run.home.root / "certs").start()
        web_playbook(run, auto_resolve=True)
        (run.home.root / "skills").mkdir()
        config = telegram_config(run, public_url=PUBLIC_URL, email=box.settings())
        del config["telegram"]  # email alone: every crash point is one of its mails
        run.home.write_config(config)

    def drive(self, run: Run) -> None:
        box: MailServer = run.notes["mail"]
        if box.received("[Guard] Incident #") and not run.notes.get("reported"):
            run.home.cli("report", "daily")
            run.notes["reported"] = True
        if any(True for m in box.received() for _ in m.iter_attachments()):
            run.service.healthy = True  # it recovers: the incident auto-resolves

    def teardown(self, run: Run) -> None:
        run.notes["mail"].stop()

    def done(self, run: Run) -> bool:
        resolved = any(i["state"] == "resolved" for i in run.incidents())
        return resolved and bool(run.notes["mail"].received("Re: "))

    def checks(self, run: Run) -> dict[str, Check]:
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "mails": mail_check(run.notes["mail"]),
            "audit": audit_check(run),
        }
