"""Heartbeat evaluation: pure, from timestamps only, so it is tested without I/O or sleeping.

A heartbeat is late when no success ping arrived by the next expected time plus its grace.
The next expected time follows the last success ping (before the first: the monitor's
creation): a fixed interval later, or the next time of its cron schedule in its time zone.
Two further reports come from the job itself: a failure ping turns it down at once, until the
next success ping; a start ping with no success ping within the grace after it turns it down
too (the job started and did not finish).
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime, timedelta
from typing import Annotated, TypeGuard

from pydantic import Field

from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input
from upwatch.kit.languages import N_
from upwatch.probes.kind import MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

# A heartbeat may arrive this long after its expected time before the monitor counts as down.
HEARTBEAT_GRACE_SECONDS = 60
# How many coming times of a schedule are checked to fall within a year of each other.
CHECKED_OCCURRENCES = 8
# croniter's R (random) and H (hashed) fields; day and month names hold no lone R or H.
_RANDOM_FIELD = re.compile(r"(?<![A-Za-z])[RrHh](?![A-Za-z])")
# Cron's shorthands that name a time; @reboot names none.
CRON_ALIASES = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


class BadSchedule(ValueError):
    """A cron schedule that cannot be used; the message says why."""


def zone_of(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise BadSchedule(f"unknown time zone {name!r} (an IANA name, e.g. Europe/Paris)") from None


def next_expected(schedule: str, timezone: str, after: datetime) -> datetime:
    """The first time of ``schedule`` strictly after ``after``, read by the wall clock of
    ``timezone`` (a time skipped by a daylight-saving change moves to the next valid one)."""
    # Imported when used: the probe worker process runs no heartbeat check.
    from croniter import CroniterBadCronError, CroniterBadDateError, croniter

    zone = zone_of(timezone)
    try:
        found = croniter(schedule, after.astimezone(zone), max_years_between_matches=1)
        moment: datetime = found.get_next(datetime)
    except CroniterBadDateError:
        raise BadSchedule("the schedule has no time within a year") from None
    except (CroniterBadCronError, ValueError, KeyError) as exc:
        raise BadSchedule(f"not a cron schedule: {exc}") from None
    return moment


def validate_schedule(schedule: str, timezone: str, now: datetime) -> None:
    """Five cron fields (minute hour day-of-month month day-of-week) or a shorthand such as
    ``@daily``, that occur within a year; raises ``BadSchedule``."""
    fields = schedule.split()
    if not (len(fields) == 5 or (len(fields) == 1 and fields[0].lower() in CRON_ALIASES)):
        raise BadSchedule(
            "five fields (minute hour day-of-month month day-of-week) or one of "
            + ", ".join(sorted(CRON_ALIASES))
        )
    if _RANDOM_FIELD.search(schedule):
        raise BadSchedule("random (R) and hashed (H) fields would move the expected time")
    from croniter import croniter

    if not croniter.is_valid(schedule):
        raise BadSchedule("not a cron schedule")
    # Every time, not only the next, must come within a year: 29 February would be late for
    # years after its next occurrence.
    moment = now
    for _ in range(CHECKED_OCCURRENCES):
        moment = next_expected(schedule, timezone, moment)


def heartbeat_outcome(
    last_ping_at: datetime | None,
    created_at: datetime,
    now: datetime,
    interval_seconds: int,
    grace_seconds: int,
    schedule: str | None = None,
    timezone: str = "UTC",
    last_start_at: datetime | None = None,
    last_fail_at: datetime | None = None,
) -> Outcome:
    """Up while the job is on time and reported no failure (module docstring). The deadline
    itself is still on time."""
    since = last_ping_at if last_ping_at is not None else created_at
    grace = timedelta(seconds=grace_seconds)
    expected = (
        next_expected(schedule, timezone, since)
        if schedule is not None
        else since + timedelta(seconds=interval_seconds)
    )
    deadline = expected + grace
    details: dict[str, object] = {
        "lastPingAt": None if last_ping_at is None else _iso(last_ping_at),
        "expectedAt": _iso(expected),
        "deadline": _iso(deadline),
    }
    if _after(last_fail_at, last_ping_at):
        return _missed(f"the job reported a failure at {_iso(last_fail_at)}", details)
    if _after(last_start_at, last_ping_at) and now > last_start_at + grace:
        return _missed(
            f"the job started at {_iso(last_start_at)} and did not report success within "
            f"{grace_seconds}s",
            details,
        )
    if now <= deadline:
        return Outcome(ok=True, response_time_ms=None, details=details)
    overdue = int((now - deadline).total_seconds())
    if last_ping_at is None:
        error = f"no ping since the monitor was created at {_iso(created_at)}"
    else:
        error = f"no ping since {_iso(last_ping_at)}"
    expectation = (
        f"expected by {schedule!r} ({timezone})"
        if schedule is not None
        else f"expected every {interval_seconds}s"
    )
    return _missed(
        f"{error} ({expectation} with {grace_seconds}s grace; {overdue}s overdue)", details
    )


def _after(report: datetime | None, last_ping_at: datetime | None) -> TypeGuard[datetime]:
    """Whether the job sent this report after its last success ping."""
    return report is not None and (last_ping_at is None or report > last_ping_at)


def _missed(error: str, details: dict[str, object]) -> Outcome:
    return Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.MISSED_HEARTBEAT,
        error=error,
        details=details,
    )


class HeartbeatProbe:
    """Reads the last pings from the spec: nothing is contacted."""

    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        try:
            return heartbeat_outcome(
                spec.last_ping_at,
                spec.created_at,
                now,
                spec.interval_seconds,
                HEARTBEAT_GRACE_SECONDS if spec.grace_seconds is None else spec.grace_seconds,
                spec.schedule,
                spec.timezone or "UTC",
                spec.last_start_at,
                spec.last_fail_at,
            )
        except BadSchedule as exc:  # refused when saved; a zone can leave the tz database
            return _missed(f"the schedule cannot be read: {exc}", {})


class HeartbeatConfig(Input):
    """Nothing is reached: the job reports to the monitor's heartbeat URL."""

    schedule: (
        Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)] | None
    ) = Field(
        default=None,
        description="Heartbeat monitors: a cron schedule (five fields, or @hourly, @daily, "
        "...) read in `timezone`; the job is late when no ping arrives by the schedule's next "
        "time after the last ping, plus `graceSeconds`. Without it: every `intervalSeconds`",
        examples=["0 2 * * *"],
    )
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="Heartbeat monitors: the IANA zone of `schedule` (UTC)"
    )
    graceSeconds: Annotated[int, Field(ge=0, le=86_400)] | None = Field(
        default=None,
        description="Heartbeat monitors: how late a ping may be, and how long a started job "
        f"may run, before the monitor is down ({HEARTBEAT_GRACE_SECONDS})",
    )


KIND = MonitorKind(
    name="heartbeat", label=N_("Heartbeat"), rank=5, config=HeartbeatConfig, probe=HeartbeatProbe()
)
