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
# How far ahead the next occurrence is looked for: a rule can be written that never occurs
# again (or occurs once a century), and looking to the year 9999 would cost seconds.
HORIZON = timedelta(days=400)


class BadSchedule(ValueError):
    """Why a schedule cannot be used, in words for the person who wrote it, and the field
    (as the API names it) that has to change."""

    def __init__(self, message: str, field: str = "rrule") -> None:
        super().__init__(message)
        self.field = field


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
        raise BadSchedule(f"not an IANA time zone: {name!r}", "timezone") from exc


# Enough to say when maintenance happens. BYYEARDAY, BYWEEKNO, BYSETPOS and friends are left
# out: with them a rule can be written that never occurs, and dateutil then walks every day to
# the year 9999 (seconds of CPU) before it says so.
_PARTS = {"FREQ", "INTERVAL", "COUNT", "UNTIL", "WKST", "BYDAY", "BYMONTH", "BYMONTHDAY"}
_PARTS |= {"BYHOUR", "BYMINUTE"}
_LONGEST_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31}
_LONGEST_MONTH |= {11: 30, 12: 31}


def _numbers(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError as exc:
        raise BadSchedule(f"not a list of numbers: {text}") from exc


def _check_parts(body: str) -> None:
    """Refuse the parts, and the combinations, with which a rule could never occur."""
    parts: dict[str, str] = {}
    for part in body.split(";"):
        name, equals, value = part.partition("=")
        if not equals:
            raise BadSchedule(f"not an RFC 5545 RRULE: {part or 'an empty part'} is not NAME=VALUE")
        if name not in _PARTS:
            raise BadSchedule(f"{name} is not supported; use " + ", ".join(sorted(_PARTS)))
        parts[name] = value
    # INTERVAL=0 would never advance: dateutil loops forever on it.
    if "INTERVAL" in parts and not all(0 < n <= 10_000 for n in _numbers(parts["INTERVAL"])):
        raise BadSchedule("INTERVAL must be between 1 and 10000")
    if "BYMONTH" in parts and not all(1 <= m <= 12 for m in _numbers(parts["BYMONTH"])):
        raise BadSchedule("BYMONTH takes months 1 to 12")
    if "BYMONTHDAY" not in parts:
        return
    if re.search(r"\d", parts.get("BYDAY", "")):
        raise BadSchedule("use BYDAY with a position (e.g. 1MO) or BYMONTHDAY, not both")
    days = _numbers(parts["BYMONTHDAY"])
    months = _numbers(parts["BYMONTH"]) if "BYMONTH" in parts else list(_LONGEST_MONTH)
    if not any(0 < abs(d) <= _LONGEST_MONTH.get(m, 0) for d in days for m in months):
        raise BadSchedule("no month of the rule has such a day")


@lru_cache(maxsize=1024)
def _compiled(text: str, first: datetime, timezone: str) -> rrule:
    start = first.astimezone(zone(timezone))
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    if any(word in body.upper() for word in ("DTSTART", "\n", "EXDATE", "RDATE")):
        raise BadSchedule("give a single RRULE line; its start is startsAt")
    _check_parts(body.upper())
    try:
        rule = rrulestr(body, dtstart=start, cache=True)
    except Exception as exc:  # dateutil answers bad text with many error types
        raise BadSchedule(f"not an RFC 5545 RRULE: {exc}") from exc
    if not isinstance(rule, rrule):  # pragma: no cover - rrulestr of one line is an rrule
        raise BadSchedule("give a single RRULE line")
    frequency = _FREQ.search(body.upper())
    if frequency is None or frequency.group(1) not in _FREQUENCIES:
        raise BadSchedule("repeat at most hourly (FREQ=HOURLY, DAILY, WEEKLY, MONTHLY, YEARLY)")
    return rule


def validate(schedule: Schedule) -> None:
    """Raise ``BadSchedule`` unless the schedule can be used."""
    try:
        _validate(schedule)
    except OverflowError as exc:  # a start near the year 9999, moved to a time zone ahead
        raise BadSchedule("too close to the end of the calendar", "startsAt") from exc


def _validate(schedule: Schedule) -> None:
    zone(schedule.timezone)
    if schedule.ends_at <= schedule.starts_at:
        raise BadSchedule("must be after startsAt", "endsAt")
    if schedule.duration > LONGEST:
        raise BadSchedule("a window lasts at most 31 days after startsAt", "endsAt")
    if schedule.rrule is not None:
        rule = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
        try:
            found = rule.between(schedule.starts_at, schedule.starts_at + HORIZON, inc=True)
        except (ValueError, OverflowError) as exc:
            raise BadSchedule(f"the rule cannot be followed: {exc}") from exc
        if not found:
            raise BadSchedule("the rule has no occurrence within a year of startsAt")


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
    """The first occurrence that starts after ``moment``; None when there is none within
    ``HORIZON``."""
    if schedule.rrule is None:
        return schedule.starts_at if schedule.starts_at > moment else None
    rule = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
    ahead = rule.between(moment, moment + HORIZON, inc=False)
    return ahead[0].astimezone(UTC) if ahead else None


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
