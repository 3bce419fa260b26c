"""Rendering: escaped HTML, cut under Telegram's limit (tags and entities whole) with a pointer
to the full text; the daily report too."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from sqlmodel import col, select

from guard.notify.base import HumanRequest, SkillOption
from guard.notify.telegram.gateway import TelegramGateway
from guard.notify.telegram.messages import LIMIT, REPORT_POINTER, cut, pointer, render_request
from guard.store.models import IncidentState, IncidentTimeline, OutboxMessage
from tests.fakes.telegram import parse_html
from tests.helpers.agent import new_incident
from tests.helpers.telegram import configure


def test_huge_evidence_is_escaped_and_cut_safely():
    evidence = "\n".join(f'line {i} <tag> & "quote" &amp;' for i in range(2000))
    req = HumanRequest(
        incident_id=7,
        title="db <down>",
        severity="error",
        target="db&co",
        count=3,
        evidence=evidence,
        options=[SkillOption("restart-db", "restarts <db>", "a" * 22)],
        deny_id="d" * 22,
        mute_id="m" * 22,
    )
    text, buttons = render_request(req, signal="ERROR <x> & y")
    assert len(text) <= LIMIT
    assert "db &lt;down&gt;" in text and "db&amp;co" in text and "&lt;tag&gt;" in text
    assert "<tag>" not in text and text.count("<pre>") == text.count("</pre>")
    assert text.endswith("<code>guard incidents show 7</code>")
    assert [d for row in buttons for _, d in row] == ["a" * 22, "fix:7", "d" * 22, "m" * 22]


def test_cut_never_splits_an_entity():
    for n in range(4080, 4100):
        text = cut("x" * n + "&amp;" * 10, more="more")
        assert len(text) <= LIMIT
        body = text.rsplit("\n…\n", 1)[0]
        assert body.count("&") == body.count("&amp;")


def test_cut_never_splits_a_tag_and_closes_what_is_open():
    line = (
        '• <b>bold <i>both</i></b> <code>a &lt;b&gt; &amp; c</code> <a href="https://e.com/">x</a>'
    )
    for extra in range(0, 120, 7):
        html = "\n".join([line] * 60) + "<pre>" + "y" * extra + "\n" + line * 40 + "</pre>"
        text = cut(html, more=pointer(3))
        assert len(text) <= LIMIT
        parse_html(text)  # raises as Telegram would refuse it
        assert text.endswith(pointer(3))


def long_report_home(home, tg) -> None:
    """200 skills learned on 2024-03-10, their names full of characters HTML must escape."""
    configure(home, tg)
    day = datetime(2024, 3, 10, 9, tzinfo=UTC)
    with home.database().session() as s:
        for i in range(200):
            learned = {"learned_skill": f'fix-<db>&"{i}"', "skill_commit": f"{i:040d}"}
            inc = new_incident(
                fingerprint=f"fp{i}",
                monitor_id="m",
                target=f"api<{i}>&co",
                severity="error",
                message="x",
                state=IncidentState.resolved,
                count=1,
                at=day,
                resolved_at=day + timedelta(minutes=5),
                details={"asked": True, **learned},
            )
            s.add(inc)
            s.flush()  # its id, for the timeline entry the learning writes
            assert inc.id is not None
            at = day + timedelta(minutes=5)
            s.add(IncidentTimeline(incident_id=inc.id, at=at, type="learned", data=learned))


def assert_valid_report(text: str) -> None:
    assert len(text) <= LIMIT
    parse_html(text)  # valid Telegram HTML: no tag split or left open
    assert not re.search(r"&(?!(?:amp|lt|gt|quot|#[0-9]+);)", text)  # no entity split
    assert "fix-&lt;db&gt;&amp;" in text and text.endswith(REPORT_POINTER)


def test_a_long_report_is_cut_to_valid_html_by_the_cli(home, tg):
    long_report_home(home, tg)
    home.cli("report", "daily", "--date", "2024-03-10")
    with home.database().session() as s:
        (row,) = s.exec(select(OutboxMessage).where(OutboxMessage.method == "send")).all()
    assert row.role == "report"
    assert_valid_report(row.text)


async def test_a_long_report_is_cut_to_valid_html_by_the_gateway(home, tg):
    long_report_home(home, tg)
    db = home.database()
    gw = TelegramGateway(home.settings(), db)
    try:
        await gw.send_report(day=date(2024, 3, 10))
    finally:
        await gw.stop()
    with db.session() as s:
        sent = s.exec(select(OutboxMessage).order_by(col(OutboxMessage.id))).all()
    assert [r.method for r in sent] == ["send", "photo"]
    assert_valid_report(sent[0].text)


def test_a_group_too_long_for_one_message_still_names_every_incident() -> None:
    """Thirty incidents with long lines: the lines that fit, then the ids of the others (a
    plain cut dropped the last incidents from the text without a word)."""
    from guard.notify.telegram import grouping
    from guard.store.models import MessageGroupMember

    members = [
        MessageGroupMember(
            channel="telegram",
            chat_id="1",
            message_id="",
            incident_id=i,
            text=f"<b>#{i}</b> [error] api error on /var/log/app.log: <code>{'x' * 250}</code>",
            buttons=[],
        )
        for i in range(1, 31)
    ]
    text, _ = grouping.render(members)
    assert len(text) <= 4096
    assert all(re.search(rf"#{i}\b", text) for i in range(1, 31))
    assert "Also #" in text and text.count("<code>") == text.count("</code>")
