"""The daily report: real figures from the store, `guard report daily --print`, the schedule."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from guard.domain.records import utcnow
from guard.notify.telegram.gateway import TelegramGateway
from guard.store.models import Approval, IncidentTimeline
from tests.helpers.agent import new_incident
from tests.helpers.telegram import CHAT, configure

DAY = datetime(2024, 3, 10, tzinfo=UTC)


def at(h: int, m: int = 0, days: int = 0) -> datetime:
    return DAY + timedelta(days=days, hours=h, minutes=m)


def seed(db) -> None:
    def inc(target, opened, resolved=None, state="resolved", count=1, **details):
        return new_incident(
            fingerprint=f"{target}{opened}",
            check_key=target,
            monitor_id="m",
            source="docker",
            target=target,
            kind="container_exited",
            severity="error",
            title=f"down {target}",
            message="x",
            state=state,
            count=count,
            at=opened,
            resolved_at=resolved,
            details=details,
        )

    with db.session() as s:
        s.add(inc("api", at(9, 10), at(9, 20), count=5, resolved_by="docker-start-exited"))
        learned = inc(
            "db",
            at(10, 5),
            at(10, 35),
            count=100,
            asked=True,
            resolved_by="learned-x",
            learned_skill="learned-x",
            skill_commit="abcdef1234567890",
        )
        s.add(learned)
        s.add(inc("api", at(10, 40), at(10, 45)))
        stuck = inc("db", at(23), state="escalated", count=3, asked=True)
        s.add(stuck)
        s.add(inc("old", at(12, days=-1), at(13, days=-1)))
        s.flush()
        s.add(  # as guard.agent.learning notes a human's fix it learned
            IncidentTimeline(
                incident_id=learned.id,
                at=at(10, 34),
                type="learned",
                data={"learned_skill": "learned-x", "skill_commit": "abcdef1234567890"},
            )
        )
        s.add(
            IncidentTimeline(
                incident_id=stuck.id,
                at=at(23, 1),
                type="state_changed",
                from_state="awaiting_human",
                to_state="escalated",
            )
        )
        s.add(
            Approval(
                id="pending-approval-1",
                incident_id=stuck.id,
                kind="skill",
                skill="docker-start-exited",
                expires_at=utcnow() + timedelta(hours=1),
            )
        )


def test_report_prints_real_figures(home, tg):
    configure(home, tg)
    seed(home.database())
    chart = home.root / "chart.png"
    out = home.cli(
        "report", "daily", "--print", "--date", "2024-03-10", "--chart", str(chart)
    ).stdout
    print(out)
    for line in (
        "Incidents opened: 4",
        "Healed by a skill: 1",
        "Healed by a human's fix: 1",
        "Recovered on their own: 1",
        "Escalated: 1",
        "Still open: 1",
        "Awaiting a human: 1",
        "MTTR: 15 min",
        "db: 103 signal(s)",
        "api: 6 signal(s)",
        "learned-x (incident #2, commit abcdef1234)",
        "incident #4: docker-start-exited",
    ):
        assert line in out, line
    assert "<b>" not in out and out.index("db: 103") < out.index("api: 6")
    assert chart.read_bytes().startswith(b"\x89PNG") and chart.stat().st_size < 10_000


async def test_report_is_scheduled_by_cron_and_sent_with_its_chart(home, tg):
    configure(home, tg, report={"cron": "30 7 * * *", "timezone": "Europe/Berlin"})
    settings = home.settings()
    db = home.database()
    seed(db)
    gw = TelegramGateway(settings, db)
    assert (
        str(gw.report_trigger) == "cron[month='*', day='*', day_of_week='*', hour='7', minute='30']"
    )
    assert gw.report_trigger.timezone == ZoneInfo("Europe/Berlin")
    await gw.start()
    try:
        job = gw.scheduler.get_job("report:daily")
        assert job.trigger is gw.report_trigger
        nxt = job.next_run_time.astimezone(ZoneInfo("Europe/Berlin"))
        assert (nxt.hour, nxt.minute) == (7, 30)
        await asyncio.wait_for(gw.ready.wait(), 20)
        # The clock says when; the scheduler does the sending: bring the fire time forward and
        # let APScheduler run the job as it will at 07:30.
        job.modify(next_run_time=datetime.now(UTC) + timedelta(seconds=1))
        for _ in range(200):
            if tg.sent("sendPhoto") and tg.bot_messages("Guard daily report"):
                break
            await asyncio.sleep(0.1)
        (text,) = tg.bot_messages("Guard daily report")
        assert text["chat"]["id"] == CHAT and "Approvals pending" in text["text"]
        (photo,) = tg.sent("sendPhoto")
        assert photo["params"]["photo"].startswith(b"\x89PNG")  # multipart upload
        assert photo["params"]["caption"] == "Incidents per hour"
        nxt = gw.scheduler.get_job("report:daily").next_run_time.astimezone(
            ZoneInfo("Europe/Berlin")
        )
        assert (nxt.hour, nxt.minute) == (7, 30)  # and the next one is back on the cron
    finally:
        await gw.stop()


def test_a_template_on_the_data_volume_replaces_the_shipped_one(home, tg):
    configure(home, tg)
    seed(home.database())
    custom = home.settings().data_dir / "templates"
    custom.mkdir(parents=True, exist_ok=True)
    (custom / "daily.html.j2").write_text(
        "<b>Ops digest</b> {{ r.opened }} opened, {{ r.escalated }} escalated\n"
    )
    out = home.cli("report", "daily", "--print", "--date", "2024-03-10").stdout
    assert out.strip() == "Ops digest 4 opened, 1 escalated"
