"""``escalation:`` (steps that page further while nobody answers, and reminders) and
``quiet_hours:`` (when questions below a severity wait for the morning)."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from guard.config.paging import NotifiersSettings
from guard.config.validators import Section
from guard.domain.durations import Duration

_TARGET = re.compile(r"[a-z][a-z0-9_-]*:[A-Za-z0-9][A-Za-z0-9._-]*")
_CLOCK = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


class EscalationStep(Section):
    after: Duration = Field(description="how long after the question was asked this step fires")
    notify: list[str] = Field(
        min_length=1, description="notifiers to page, `kind:name` from `notifiers:`"
    )

    @field_validator("notify")
    @classmethod
    def _targets(cls, value: list[str]) -> list[str]:
        for target in value:
            if not _TARGET.fullmatch(target):
                raise ValueError(
                    f"escalation.steps[].notify {target!r}: name a notifier as kind:name, "
                    "e.g. pagerduty:primary or webhook:ops"
                )
        return value


class EscalationSettings(Section):
    remind_every: Duration = Field(
        default=0.0,
        description="repeat a question nobody answered (or acknowledged) this often, in the "
        "incident's thread where it was asked (0: never)",
    )
    steps: list[EscalationStep] = Field(
        default_factory=list,
        description="each fires once, `after` the question was asked, unless it was answered "
        "or acknowledged",
    )
    check_every: Duration = Field(
        default=15.0, description="how often the leader looks for due steps and reminders"
    )

    @field_validator("steps")
    @classmethod
    def _ordered(cls, value: list[EscalationStep]) -> list[EscalationStep]:
        afters = [s.after for s in value]
        if afters != sorted(afters):
            raise ValueError(f"escalation.steps: `after` must not decrease (got {afters})")
        return value

    @property
    def active(self) -> bool:
        """Whether anything escalates (steps or reminders)."""
        return bool(self.steps) or self.remind_every > 0


def check_steps(esc: EscalationSettings, info: ValidationInfo) -> EscalationSettings:
    """Every step's ``notify`` names a configured notifier (``notifiers`` is validated first)."""
    notifiers = info.data.get("notifiers")
    known = notifiers.names() if isinstance(notifiers, NotifiersSettings) else []
    for i, step in enumerate(esc.steps):
        for j, ref in enumerate(step.notify):
            if ref not in known:
                have = ", ".join(known) if known else "none are configured under notifiers:"
                raise ValueError(
                    f"escalation.steps[{i}].notify[{j}]: unknown notifier {ref!r}; known: {have}"
                )
    return esc


Escalation = Annotated[EscalationSettings, AfterValidator(check_steps)]

Below = Literal["info", "warning", "error", "critical"]


class QuietHours(Section):
    """``{from: "22:00", to: "08:00", timezone: Europe/Madrid, below: critical}``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", description="start of the window, HH:MM local time")
    to: str = Field(description="end of the window, HH:MM local time (may be past midnight)")
    timezone: str = Field(default="UTC", description="an IANA zone, e.g. Europe/Madrid")
    below: Below = Field(
        default="critical",
        description="questions about incidents below this severity wait for the window's end",
    )

    @field_validator("from_", "to")
    @classmethod
    def _clock(cls, value: str, info: object) -> str:
        name = "from" if getattr(info, "field_name", "") == "from_" else "to"
        if not isinstance(value, str) or not _CLOCK.fullmatch(value.strip()):
            raise ValueError(f"quiet_hours.{name} {value!r}: a time of day as HH:MM, e.g. 22:00")
        return value.strip()

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(value)
        except Exception:
            raise ValueError(
                f"quiet_hours.timezone {value!r}: not a known time zone (e.g. Europe/Madrid)"
            ) from None
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> QuietHours:
        if self.start == self.end:
            raise ValueError("quiet_hours: `from` and `to` are the same time: an empty window")
        return self

    @property
    def start(self) -> time:
        return _parse(self.from_)

    @property
    def end(self) -> time:
        return _parse(self.to)

    def window_end(self, at: datetime) -> datetime | None:
        """When the window that ``at`` (aware) falls in ends, or None if ``at`` is outside it.
        A window that wraps midnight (22:00-08:00) ends the next morning."""
        from zoneinfo import ZoneInfo

        local = at.astimezone(ZoneInfo(self.timezone))
        now, start, end = local.time(), self.start, self.end
        if start < end:
            inside, ends_tomorrow = start <= now < end, False
        else:  # wraps midnight
            inside, ends_tomorrow = now >= start or now < end, now >= start
        if not inside:
            return None
        day = local.date() + timedelta(days=1 if ends_tomorrow else 0)
        naive = datetime.combine(day, end)
        return naive.replace(tzinfo=ZoneInfo(self.timezone)).astimezone(at.tzinfo)


def _parse(text: str) -> time:
    hours, minutes = text.split(":")
    return time(int(hours), int(minutes))
