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

from dateutil.rrule import DAILY, HOURLY, MONTHLY, WEEKLY, YEARLY, rrule, rrulestr

# Finer rules (every minute, every second) make no sense for maintenance and would cost a scan
# per check.
_FREQUENCIES = {"YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY"}
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
_MOST_MINUTES = 4
_LONGEST_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31}
_LONGEST_MONTH |= {11: 30, 12: 31}


def _numbers(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError as exc:
        raise BadSchedule(f"not a list of numbers: {text}") from exc


def _check_parts(body: str) -> dict[str, str]:
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
    # Each listed minute is an occurrence every hour: four a quarter-hourly schedule.
    if "BYMINUTE" in parts and len(_numbers(parts["BYMINUTE"])) > _MOST_MINUTES:
        raise BadSchedule(f"BYMINUTE takes at most {_MOST_MINUTES} minutes")
    if "BYMONTH" in parts and not all(1 <= m <= 12 for m in _numbers(parts["BYMONTH"])):
        raise BadSchedule("BYMONTH takes months 1 to 12")
    _check_steps(parts)
    if "BYMONTHDAY" not in parts:
        return parts
    if re.search(r"\d", parts.get("BYDAY", "")):
        raise BadSchedule("use BYDAY with a position (e.g. 1MO) or BYMONTHDAY, not both")
    days = _numbers(parts["BYMONTHDAY"])
    months = _numbers(parts["BYMONTH"]) if "BYMONTH" in parts else list(_LONGEST_MONTH)
    if not any(0 < abs(d) <= _LONGEST_MONTH.get(m, 0) for d in days for m in months):
        raise BadSchedule("no month of the rule has such a day")
    return parts


# A COUNT is followed from startsAt, occurrence by occurrence, once per window (cached): the
# bound keeps that walk short.
MOST_COUNT = 1000
LONGEST_SERIES = timedelta(days=7305)
# The rule's wall-clock step in dateutil's terms; the names of FREQ's values as RFC 5545 has them.
_STEPS = {"YEARLY": YEARLY, "MONTHLY": MONTHLY, "WEEKLY": WEEKLY, "DAILY": DAILY, "HOURLY": HOURLY}
_MARGIN = timedelta(hours=3)
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


def _check_steps(parts: dict[str, str]) -> None:
    """Refuse the steps that can never land where the rule's filters point: dateutil would
    walk to the year 9999 finding nothing (seconds of CPU), whatever startsAt is."""
    frequency = parts.get("FREQ", "")
    interval = _numbers(parts.get("INTERVAL", "1"))[0]
    # The position of a weekday in a month (1MO .. 5MO, -1FR) or a year (up to 52).
    most = 52 if frequency == "YEARLY" and "BYMONTH" not in parts else 5
    for day in filter(None, parts.get("BYDAY", "").split(",")):
        position = day[:-2]
        if position not in ("", "+", "-") and not 0 < abs(_numbers(position)[0]) <= most:
            raise BadSchedule(f"a weekday's position here runs from 1 to {most} (or -1 to -{most})")
    weeks = {"DAILY": 7, "HOURLY": 7 * 24}.get(frequency)
    if weeks and interval % weeks == 0 and "BYDAY" in parts:
        raise BadSchedule("a step of whole weeks keeps the weekday: use FREQ=WEEKLY with BYDAY")
    if frequency == "MONTHLY" and interval % 12 == 0 and "BYMONTH" in parts:
        raise BadSchedule("a step of whole years keeps the month: use FREQ=YEARLY with BYMONTH")


@dataclass(frozen=True, slots=True)
class _Rule:
    """A rule made independent of its start: every part dateutil would take from DTSTART is
    written out, so the same rule can be started at any period boundary in phase with the
    first one, and only the periods around a moment are ever walked."""

    body: str  # with the implied parts written out; no COUNT
    first: datetime  # startsAt in the rule's zone
    step: int  # dateutil's YEARLY .. HOURLY
    interval: int
    wkst: int
    # A COUNT's last occurrence, on the rule's wall clock as dateutil compares it (in UTC, one
    # in a spring-forward gap would end the series early or late).
    last: datetime | None = None

    def started(self, dtstart: datetime) -> rrule:
        rule = rrulestr(self.body, dtstart=dtstart)
        if not isinstance(rule, rrule):  # pragma: no cover - rrulestr of one line is an rrule
            raise BadSchedule("give a single RRULE line")
        return rule if self.last is None else rule.replace(until=self.last)

    def near(self, moment: datetime) -> rrule:
        """The rule started a little before ``moment``: the same occurrences from there on,
        whatever ``startsAt`` was. dateutil's phase (which years, months, weeks, days or hours
        of ``INTERVAL`` are on) is that of DTSTART's period, and it drops occurrences before
        DTSTART, so DTSTART may be any moment within a period in phase with ``startsAt``."""
        first = self.first.replace(tzinfo=None)
        try:
            # A margin wider than any daylight-saving shift, counted on the wall clock as
            # dateutil counts.
            local = moment.astimezone(self.first.tzinfo).replace(tzinfo=None, fold=0)
            local = local.replace(microsecond=0) - _MARGIN
        except OverflowError:  # a moment at the start of the calendar
            return self.started(self.first)
        if local <= first:
            return self.started(self.first)
        period = self._period(first, local)
        if period % self.interval:
            try:
                local = self._period_start(first, period - period % self.interval + self.interval)
            except (ValueError, OverflowError):  # the next period in phase is past year 9999
                return rrule(YEARLY, dtstart=self.first, count=0)
        return self.started(local.replace(tzinfo=self.first.tzinfo))

    def _base(self, first: datetime) -> datetime:
        """The start of the period ``startsAt`` falls in."""
        midnight = first.replace(hour=0, minute=0, second=0)
        if self.step == HOURLY:
            return first.replace(minute=0, second=0)
        if self.step == DAILY:
            return midnight
        if self.step == WEEKLY:
            return midnight - timedelta(days=(first.weekday() - self.wkst) % 7)
        if self.step == MONTHLY:
            return midnight.replace(day=1)
        return midnight.replace(month=1, day=1)

    def _period(self, first: datetime, local: datetime) -> int:
        """Which period after the first one ``local`` falls in (0: the first)."""
        base = self._base(first)
        if self.step == HOURLY:
            return int((local - base).total_seconds() // 3600)
        if self.step == DAILY:
            return (local - base).days
        if self.step == WEEKLY:
            return (local - base).days // 7
        if self.step == MONTHLY:
            return (local.year - base.year) * 12 + local.month - base.month
        return local.year - base.year

    def _period_start(self, first: datetime, period: int) -> datetime:
        base = self._base(first)
        if self.step == HOURLY:
            return base + timedelta(hours=period)
        if self.step == DAILY:
            return base + timedelta(days=period)
        if self.step == WEEKLY:
            return base + timedelta(weeks=period)
        if self.step == MONTHLY:
            index = base.year * 12 + base.month - 1 + period
            return base.replace(year=index // 12, month=index % 12 + 1)
        return base.replace(year=base.year + period)


def _explicit(parts: dict[str, str], first: datetime) -> dict[str, str]:
    """``parts`` with what dateutil would read from DTSTART written out (its rrule.__init__)."""
    parts = dict(parts)
    frequency = parts["FREQ"]
    parts["BYSECOND"] = str(first.second)
    parts.setdefault("BYMINUTE", str(first.minute))
    if frequency != "HOURLY":
        parts.setdefault("BYHOUR", str(first.hour))
    if "BYMONTHDAY" not in parts and "BYDAY" not in parts:
        if frequency == "YEARLY":
            parts.setdefault("BYMONTH", str(first.month))
            parts["BYMONTHDAY"] = str(first.day)
        elif frequency == "MONTHLY":
            parts["BYMONTHDAY"] = str(first.day)
        elif frequency == "WEEKLY":
            parts["BYDAY"] = _WEEKDAYS[first.weekday()]
    return parts


def _text(parts: dict[str, str]) -> str:
    return ";".join(f"{name}={value}" for name, value in parts.items())


@lru_cache(maxsize=1024)
def _compiled(text: str, first: datetime, timezone: str) -> _Rule:
    start = first.astimezone(zone(timezone))
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    if any(word in body.upper() for word in ("DTSTART", "\n", "EXDATE", "RDATE")):
        raise BadSchedule("give a single RRULE line; its start is startsAt")
    parts = _check_parts(body.upper())
    frequency = parts.get("FREQ")
    if frequency not in _FREQUENCIES:
        raise BadSchedule("repeat at most hourly (FREQ=HOURLY, DAILY, WEEKLY, MONTHLY, YEARLY)")
    if "COUNT" in parts and "UNTIL" in parts:
        raise BadSchedule("give COUNT or UNTIL, not both")
    if "COUNT" in parts and not all(0 < n <= MOST_COUNT for n in _numbers(parts["COUNT"])):
        raise BadSchedule(f"COUNT must be between 1 and {MOST_COUNT}")
    try:
        rule = rrulestr(_text(parts), dtstart=start)
        explicit = _explicit(parts, start.replace(microsecond=0))
        if "COUNT" in parts:
            # The last of COUNT occurrences becomes the end (a walk of at most MOST_COUNT, once
            # per window), so that later the rule can start near any moment. A series that
            # sparse rules stretch over centuries would make that walk long: refused.
            last = None
            for number, last in enumerate(rule, start=1):
                if last > start + LONGEST_SERIES:
                    raise BadSchedule("a COUNT series must end within 20 years; give UNTIL")
                if number == MOST_COUNT:
                    break
            del explicit["COUNT"]
            last = start - timedelta(seconds=1) if last is None else last
        else:
            last = None
        compiled = _Rule(
            body=_text(explicit),
            first=start.replace(microsecond=0),
            step=_STEPS[frequency],
            interval=int(parts.get("INTERVAL", "1")),
            wkst=_WEEKDAYS.index(parts.get("WKST", "MO")),
            last=last,
        )
        compiled.started(compiled.first)
    except BadSchedule:
        raise
    except Exception as exc:  # dateutil answers bad text with many error types
        raise BadSchedule(f"not an RFC 5545 RRULE: {exc}") from exc
    return compiled


def _first_after(
    rule: rrule, moment: datetime, inclusive: bool, limit: datetime
) -> datetime | None:
    """The rule's first occurrence after ``moment`` (or at it), if one comes before ``limit``:
    iterated, so a sparse rule stops at the limit instead of listing everything to it."""
    for found in rule:
        if found > limit:
            return None
        if found > moment or (inclusive and found == moment):
            return found
    return None


def validate(schedule: Schedule) -> None:
    """Raise ``BadSchedule`` unless the schedule can be used."""
    try:
        _validate(schedule)
    except OverflowError as exc:  # a start near year 1 or 9999, moved to its time zone
        raise BadSchedule("too close to an end of the calendar", "startsAt") from exc


def _validate(schedule: Schedule) -> None:
    zone(schedule.timezone)
    if schedule.ends_at <= schedule.starts_at:
        raise BadSchedule("must be after startsAt", "endsAt")
    if schedule.duration > LONGEST:
        raise BadSchedule("a window lasts at most 31 days after startsAt", "endsAt")
    if schedule.rrule is not None:
        compiled = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
        start = schedule.starts_at.replace(microsecond=0)  # as dateutil starts the rule
        try:
            found = _first_after(compiled.started(compiled.first), start, True, start + HORIZON)
        except (ValueError, OverflowError) as exc:
            raise BadSchedule(f"the rule cannot be followed: {exc}") from exc
        if found is None:
            raise BadSchedule("the rule has no occurrence within a year of startsAt")


def _starts_before(schedule: Schedule, moment: datetime) -> datetime | None:
    """The last occurrence that starts at or before ``moment``, if it could still cover it
    (it starts less than a window's length before)."""
    if schedule.rrule is None:
        return schedule.starts_at if schedule.starts_at <= moment else None
    compiled = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
    found = compiled.near(moment - schedule.duration).before(moment, inc=True)
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
    compiled = _compiled(schedule.rrule, schedule.starts_at, schedule.timezone)
    found = _first_after(compiled.near(moment), moment, False, moment + HORIZON)
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
        near = rule.near(since - duration)
        starts = [s.astimezone(UTC) for s in near.between(since - duration, until, inc=True)]
    for start in starts:
        if start + duration > since and start < until:
            yield start, start + duration
