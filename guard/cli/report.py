"""``guard report daily``: the daily status report, from the store.

``--print`` writes it to stdout (markup stripped); otherwise, with Telegram configured, it is
queued in the outbox for the chat, text and chart, and ``guard run`` delivers it (this command
does not talk to Telegram itself, so it works while Telegram is down).
"""

from __future__ import annotations

from datetime import date

import typer

from guard.cli.common import ConfigOption, database, echo, fail, out, settings_from
from guard.reports import daily
from guard.reports.chart import incidents_per_hour

app = typer.Typer(help="Status reports.", no_args_is_help=True)


@app.command("daily")
def daily_report(
    print_: bool = typer.Option(False, "--print", help="Write the report to stdout only."),
    day: str | None = typer.Option(
        None,
        "--date",
        metavar="YYYY-MM-DD",
        help="A calendar day in report.timezone (default: the last 24 hours).",
    ),
    chart: str | None = typer.Option(
        None, "--chart", metavar="FILE", help="Also write the incidents-per-hour PNG here."
    ),
    config: str | None = ConfigOption,
) -> None:
    """Render the daily report (incidents, healing, MTTR, noisy targets, learned skills)."""
    settings = settings_from(config, logging=False)
    db = database(settings, read_only=True)
    try:
        when = date.fromisoformat(day) if day else None
    except ValueError:
        fail(f"--date {day!r}: use YYYY-MM-DD")
    report = daily.gather(db, settings, when)
    text = daily.render(report, settings)
    png = incidents_per_hour(report.per_hour) if chart or not print_ else b""
    if chart:
        with open(chart, "wb") as f:
            f.write(png)
    if print_:
        echo(daily.to_plain(text), nl=False)
        return
    if not settings.telegram.configured:
        fail("Telegram is not configured (telegram.bot_token and telegram.chat_id); use --print")
    from guard.notify.telegram import outbox
    from guard.notify.telegram.messages import REPORT_POINTER, cut

    chat = str(settings.telegram.chat_id)
    outbox.enqueue(
        db, method="send", chat_id=chat, text=cut(text, more=REPORT_POINTER), role="report"
    )
    outbox.enqueue(
        db, method="photo", chat_id=chat, text="Incidents per hour", photo=png, role="report"
    )
    out.print("report queued for Telegram; `guard run` sends it")
