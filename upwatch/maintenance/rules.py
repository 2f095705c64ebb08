"""When a maintenance window is on: pure functions of its schedule and a moment.

A window is one-off (``startsAt``..``endsAt``) or recurring: an RFC 5545 RRULE whose first
occurrence is ``startsAt`` and whose every occurrence lasts ``endsAt - startsAt``. The rule
repeats in the owner's time zone, by the wall clock: "every day at 02:00 Europe/Paris" stays
at 02:00 across daylight-saving changes, as people mean it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import rrule, rrulestr

# Finer rules (every minute, every second) make no sense for maintenance and would cost a scan
# per check.
_FREQUENCIES = {"YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY"}
_FREQ = re.compile(r"(?:^|;)FREQ=([A-Z]+)")
# A bound on a window's length: longer is a paused monitor, not maintenance.
LONGEST = timedelta(days=31)


class BadSchedule(ValueError):
    """Why a schedule cannot be used, in words for the person who wrote it."""


@dataclass(frozen=True, slots=True)
class Schedule:
    starts_at: datetime  # time-zone aware
    ends_at: datetime
    rrule: str | None = None
    timezone: str = "UTC"

    @property
    def duration(self) -> timedelta:
        return self.ends_at - self.starts_at


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadSchedule(f"not an IANA time zone: {name!r}") from exc


@lru_cache(maxsize=1024)
def _compiled(text: str, first: datetime, timezone: str) -> rrule:
    start = first.astimezone(zone(timezone))
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    if any(word in body.upper() for word in ("DTSTART", "\n", "EXDATE", "RDATE")):
        raise BadSchedule("give a single RRULE line; its start is startsAt")
    try:
        rule = rrulestr(body, dtstart=start, cache=True)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise BadSchedule(f"not an RFC 5545 RRULE: {exc}") from exc
    if not isinstance(rule, rrule):  # pragma: no cover - rrulestr of one line is an rrule
        raise BadSchedule("give a single RRULE line")
    frequency = _FREQ.search(body.upper())
    if frequency is None or frequency.group(1) not in _FREQUENCIES:
        raise BadSchedule("repeat at most hourly (FREQ=HOURLY, DAILY, WEEKLY, MONTHLY, YEARLY)")
    return rule


def validate(schedule: Schedule) -> None:
    """Raise ``BadSchedule`` unless the schedule can be used."""
    zone(schedule.timezone)
    if schedule.ends_at <= schedule.starts_at:
        raise BadSchedule("endsAt must be after startsAt")
    if schedule.duration > LONGEST:
        raise BadSchedule("a window lasts at most 31 days")
    if schedule.rrule is not None:
        rule = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
        if rule.after(schedule.starts_at, inc=True) is None:
            raise BadSchedule("the rule has no occurrence")


def _starts_before(schedule: Schedule, moment: datetime) -> datetime | None:
    """The last occurrence that starts at or before ``moment``."""
    if schedule.rrule is None:
        return schedule.starts_at if schedule.starts_at <= moment else None
    rule = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
    found = rule.before(moment, inc=True)
    return None if found is None else found.astimezone(UTC)


def occurrence_at(schedule: Schedule, moment: datetime) -> tuple[datetime, datetime] | None:
    """The occurrence that covers ``moment`` (start <= moment < end), if any. Occurrences last
    the same, so if any covers it, the last one to start before it does."""
    start = _starts_before(schedule, moment)
    if start is None or moment >= start + schedule.duration:
        return None
    return start, start + schedule.duration


def active(schedule: Schedule, moment: datetime) -> bool:
    return occurrence_at(schedule, moment) is not None


def next_start(schedule: Schedule, moment: datetime) -> datetime | None:
    """The first occurrence that starts after ``moment``; None when there is none."""
    if schedule.rrule is None:
        return schedule.starts_at if schedule.starts_at > moment else None
    rule = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
    found = rule.after(moment, inc=False)
    return None if found is None else found.astimezone(UTC)


def occurrences(
    schedule: Schedule, since: datetime, until: datetime
) -> Iterator[tuple[datetime, datetime]]:
    """Occurrences that overlap [since, until), in order."""
    duration = schedule.duration
    if schedule.rrule is None:
        starts: list[datetime] = [schedule.starts_at]
    else:
        rule = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
        starts = [s.astimezone(UTC) for s in rule.between(since - duration, until, inc=True)]
    for start in starts:
        if start + duration > since and start < until:
            yield start, start + duration
