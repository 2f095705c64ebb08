"""Maintenance schedules, property-tested against enumerating every occurrence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrulestr
from hypothesis import given
from hypothesis import strategies as st

from upwatch.maintenance.rules import (
    HORIZON,
    BadSchedule,
    Schedule,
    active,
    next_start,
    occurrence_at,
    occurrences,
    validate,
)

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]


@st.composite
def schedules(draw: st.DrawFn) -> Schedule:
    start = draw(
        st.datetimes(
            min_value=datetime(2026, 1, 1),  # noqa: DTZ001 - hypothesis takes naive bounds
            max_value=datetime(2027, 12, 31),  # noqa: DTZ001
            timezones=st.just(UTC),
        )
    ).replace(microsecond=0)
    duration = timedelta(minutes=draw(st.integers(1, 3 * 24 * 60)))
    rule = draw(
        st.none()
        | st.builds(
            "FREQ={};INTERVAL={};COUNT={}".format,
            st.sampled_from(["HOURLY", "DAILY", "WEEKLY", "MONTHLY"]),
            st.integers(1, 5),
            st.integers(1, 40),
        )
    )
    return Schedule(start, start + duration, rule, draw(st.sampled_from(ZONES)))


def every_occurrence(schedule: Schedule) -> list[tuple[datetime, datetime]]:
    """All of them, by enumerating the rule (each generated rule has a COUNT)."""
    if schedule.rrule is None:
        return [(schedule.starts_at, schedule.ends_at)]
    local = schedule.starts_at.astimezone(ZoneInfo(schedule.timezone))
    starts = [s.astimezone(UTC) for s in rrulestr(schedule.rrule, dtstart=local)]
    return [(s, s + schedule.duration) for s in starts]


moments = st.datetimes(
    min_value=datetime(2025, 12, 1),  # noqa: DTZ001 - hypothesis takes naive bounds
    max_value=datetime(2031, 1, 1),  # noqa: DTZ001
    timezones=st.just(UTC),
)


@given(schedules(), moments)
def test_a_moment_is_in_maintenance_exactly_when_some_occurrence_covers_it(
    schedule: Schedule, moment: datetime
) -> None:
    covering = [o for o in every_occurrence(schedule) if o[0] <= moment < o[1]]
    assert active(schedule, moment) == bool(covering)
    if covering:
        assert occurrence_at(schedule, moment) == covering[-1]


@given(schedules(), moments, st.integers(0, 400 * 24))
def test_the_occurrences_of_a_period_are_those_that_overlap_it(
    schedule: Schedule, since: datetime, hours: int
) -> None:
    until = since + timedelta(hours=hours)
    expected = [o for o in every_occurrence(schedule) if o[1] > since and o[0] < until]
    assert list(occurrences(schedule, since, until)) == expected


@given(schedules(), moments)
def test_the_next_start_is_the_first_occurrence_after_the_moment(
    schedule: Schedule, moment: datetime
) -> None:
    ahead = moment + HORIZON if schedule.rrule else datetime.max.replace(tzinfo=UTC)
    later = [s for s, _ in every_occurrence(schedule) if moment < s < ahead]
    assert next_start(schedule, moment) == (later[0] if later else None)


def test_a_daily_window_keeps_its_wall_clock_time_across_daylight_saving() -> None:
    schedule = Schedule(
        datetime(2026, 3, 1, 8, 0, tzinfo=UTC),  # 09:00 in Paris (winter, UTC+1)
        datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
        "FREQ=DAILY",
        "Europe/Paris",
    )
    assert active(schedule, datetime(2026, 3, 10, 8, 30, tzinfo=UTC))
    # Summer time (UTC+2) from 29 March: 09:00 in Paris is 07:00 UTC.
    assert active(schedule, datetime(2026, 4, 10, 7, 30, tzinfo=UTC))
    assert not active(schedule, datetime(2026, 4, 10, 8, 30, tzinfo=UTC))


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "no month of the rule has such a day"),
        ("FREQ=DAILY;BYMONTH=4,6;BYMONTHDAY=31", "no month of the rule has such a day"),
        ("FREQ=MONTHLY;BYDAY=5MO;BYMONTHDAY=1", "not both"),
        ("FREQ=DAILY;BYYEARDAY=366", "BYYEARDAY is not supported"),
        ("FREQ=DAILY;BYMONTH=13", "months 1 to 12"),
        ("FREQ=YEARLY;INTERVAL=0", "INTERVAL must be between 1 and 10000"),
        ("FREQ=MONTHLY;BYSETPOS=40;BYDAY=MO", "BYSETPOS is not supported"),
    ],
)
def test_a_rule_that_could_never_occur_is_refused_before_dateutil_searches_for_centuries(
    rule: str, reason: str
) -> None:
    """dateutil would walk every day to the year 9999 to find none (seconds of CPU)."""
    schedule = Schedule(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 1, tzinfo=UTC), rule)
    with pytest.raises(BadSchedule, match=reason):
        validate(schedule)


@pytest.mark.parametrize(
    ("schedule", "reason"),
    [
        (
            Schedule(datetime(2026, 1, 2, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)),
            "must be after",
        ),
        (
            Schedule(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
            "31 days",
        ),
        (
            Schedule(
                datetime(2026, 1, 1, tzinfo=UTC),
                datetime(2026, 1, 1, 1, tzinfo=UTC),
                "FREQ=DAILY",
                "Mars/Olympus",
            ),
            "time zone",
        ),
        (
            Schedule(
                datetime(2026, 1, 1, tzinfo=UTC),
                datetime(2026, 1, 1, 1, tzinfo=UTC),
                "FREQ=MINUTELY",
            ),
            "at most hourly",
        ),
        (
            Schedule(
                datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 1, tzinfo=UTC), "EVERY DAY"
            ),
            "RRULE",
        ),
        (
            Schedule(
                datetime(2026, 1, 1, tzinfo=UTC),
                datetime(2026, 1, 1, 1, tzinfo=UTC),
                "DTSTART:20250101T000000Z\nRRULE:FREQ=DAILY",
            ),
            "single RRULE line",
        ),
        (
            Schedule(
                datetime(2026, 1, 1, tzinfo=UTC),
                datetime(2026, 1, 1, 1, tzinfo=UTC),
                "FREQ=DAILY;UNTIL=20250101T000000Z",
            ),
            "no occurrence within a year",
        ),
    ],
)
def test_a_schedule_that_cannot_work_is_refused_with_the_reason(
    schedule: Schedule, reason: str
) -> None:
    with pytest.raises(BadSchedule, match=reason):
        validate(schedule)
