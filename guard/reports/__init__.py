"""Reports: the daily status report (figures from the store, a Jinja2 template, a chart)."""

from guard.reports.daily import DailyReport, gather, render, to_plain

__all__ = ["DailyReport", "gather", "render", "to_plain"]
