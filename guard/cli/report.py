"""``guard report daily``: the daily status report, from the store.

``--print`` writes it to stdout (markup stripped); otherwise it is queued in the outbox for the
configured chat channels, text and chart, and ``guard run`` delivers it (this command does not
talk to a channel itself, so it works while the channel is down).
"""

from __future__ import annotations

from datetime import date

import typer

from guard.cli.common import ConfigOption, database, echo, fail, out, settings_from
from guard.domain.exceptions import ConfigError
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
    from guard.notify.reports import queue_daily_report

    try:
        out.print(queue_daily_report(settings, db, text, png))
    except ConfigError as exc:
        fail(str(exc))
