"""Maintenance schedules, property-tested against enumerating every occurrence."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrule, rrulestr
from hypothesis import assume, given, settings
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

NEW_YEAR = datetime(2026, 1, 1, tzinfo=UTC)


def first_hour(rule: str | None = None, timezone: str = "UTC") -> Schedule:
    """An hour from midnight UTC on 1 January 2026, repeated by ``rule``."""
    return Schedule(NEW_YEAR, NEW_YEAR + timedelta(hours=1), rule, timezone)


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
    schedule = Schedule(start, start + duration, rule, draw(st.sampled_from(ZONES)))
    # Only schedules the service takes: a monthly rule from the 31st skips the shorter months
    # and may run past the 20 years a COUNT series is allowed (refused when it is saved).
    try:
        validate(schedule)
    except BadSchedule:
        assume(False)
    return schedule


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
    schedule = first_hour(rule)
    with pytest.raises(BadSchedule, match=reason):
        validate(schedule)


@pytest.mark.parametrize(
    ("schedule", "reason"),
    [
        (Schedule(NEW_YEAR + timedelta(days=1), NEW_YEAR), "must be after"),
        (Schedule(NEW_YEAR, datetime(2026, 3, 1, tzinfo=UTC)), "31 days"),
        (first_hour("FREQ=DAILY", "Mars/Olympus"), "time zone"),
        (first_hour("FREQ=MINUTELY"), "at most hourly"),
        (first_hour("EVERY DAY"), "RRULE"),
        (first_hour("DTSTART:20250101T000000Z\nRRULE:FREQ=DAILY"), "single RRULE line"),
        (first_hour("FREQ=DAILY;UNTIL=20250101T000000Z"), "no occurrence within a year"),
    ],
)
def test_a_schedule_that_cannot_work_is_refused_with_the_reason(
    schedule: Schedule, reason: str
) -> None:
    with pytest.raises(BadSchedule, match=reason):
        validate(schedule)


# Rules without COUNT (which the property tests above enumerate) and with every supported
# part, started up to three years before the moments asked about: the rule, started near each
# moment, must agree with dateutil walking it from startsAt.
@st.composite
def open_rules(draw: st.DrawFn) -> str:
    frequency = draw(st.sampled_from(["HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"]))
    parts = [f"FREQ={frequency}", f"INTERVAL={draw(st.integers(1, 7))}"]
    days = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]

    def part(name: str, values: st.SearchStrategy[int | str], most: int) -> str:
        """``name`` with one to ``most`` values drawn from ``values``."""
        return f"{name}=" + ",".join(map(str, draw(st.sets(values, min_size=1, max_size=most))))

    if draw(st.booleans()):
        parts.append("WKST=" + draw(st.sampled_from(days)))
    if draw(st.booleans()):
        parts.append(part("BYMONTH", st.integers(1, 12), 3))
    if draw(st.booleans()):
        parts.append(part("BYMONTHDAY", st.integers(1, 28), 3))
    elif draw(st.booleans()):
        parts.append(part("BYDAY", st.sampled_from(days), 3))
    if draw(st.booleans()):
        parts.append(part("BYHOUR", st.integers(0, 23), 3))
    if draw(st.booleans()):
        parts.append(part("BYMINUTE", st.integers(0, 59), 2))
    if draw(st.booleans()):
        parts.append("UNTIL=" + draw(st.sampled_from(["20270301T000000Z", "20290715T120000Z"])))
    return ";".join(parts)


@settings(max_examples=80)
@given(
    open_rules(),
    st.datetimes(
        min_value=datetime(2024, 1, 1),  # noqa: DTZ001 - hypothesis takes naive bounds
        max_value=datetime(2027, 12, 31),  # noqa: DTZ001
        timezones=st.just(UTC),
    ),
    st.integers(1, 3 * 24 * 60),
    st.sampled_from(ZONES),
    st.integers(0, 3 * 365 * 24 * 60),
)
def test_a_rule_started_near_the_moment_finds_what_walking_it_from_its_start_finds(
    rule: str, start: datetime, minutes: int, timezone: str, later: int
) -> None:
    start = start.replace(microsecond=0)
    schedule = Schedule(start, start + timedelta(minutes=minutes), rule, timezone)
    try:
        validate(schedule)
    except BadSchedule:
        assume(False)
    moment = start + timedelta(minutes=later, seconds=later % 61)
    walked = rrulestr(rule, dtstart=start.astimezone(ZoneInfo(timezone)))
    last = walked.before(moment, inc=True)
    covering = last is not None and moment < last + schedule.duration
    expected = (
        (last.astimezone(UTC), last.astimezone(UTC) + schedule.duration) if covering else None
    )
    assert occurrence_at(schedule, moment) == expected
    ahead = walked.between(moment, moment + HORIZON)
    assert next_start(schedule, moment) == (ahead[0].astimezone(UTC) if ahead else None)
    since = moment - timedelta(days=3)
    assert list(occurrences(schedule, since, moment)) == [
        (s.astimezone(UTC), s.astimezone(UTC) + schedule.duration)
        for s in walked.between(since - schedule.duration, moment, inc=True)
        if s + schedule.duration > since and s < moment
    ]


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many occurrences dateutil produced: the work a schedule cost, counted rather than
    timed."""
    count = [0]
    iterate = rrule._iter

    def counting(self: rrule) -> Iterator[datetime]:
        for found in iterate(self):
            count[0] += 1
            yield found

    monkeypatch.setattr(rrule, "_iter", counting)
    return count


FAR_PAST = [
    # The review's reproductions: walked from startsAt to now, 26 s and 150 s on the event loop.
    Schedule(
        datetime(1700, 1, 1, tzinfo=UTC), datetime(1700, 1, 1, 0, 30, tzinfo=UTC), "FREQ=HOURLY"
    ),
    Schedule(datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 1, 0, 30, tzinfo=UTC), "FREQ=HOURLY"),
    Schedule(
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1, 1, 31, tzinfo=UTC),
        "FREQ=HOURLY;BYMINUTE=0,15,30,45",
        "Asia/Kolkata",
    ),
    Schedule(
        datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 1, 1, tzinfo=UTC), "FREQ=DAILY;INTERVAL=7"
    ),
]


@pytest.mark.parametrize("schedule", FAR_PAST, ids=lambda s: f"{s.starts_at.year}-{s.rrule}")
def test_a_window_started_centuries_ago_costs_what_a_new_one_costs(
    schedule: Schedule, walked: list[int]
) -> None:
    now = datetime(2026, 11, 26, 10, 7, tzinfo=UTC)
    validate(schedule)
    start = next_start(schedule, now)
    assert start is not None
    assert now < start <= now + timedelta(days=7)
    assert active(schedule, start)
    list(occurrences(schedule, now - timedelta(days=1), now))
    # A few windows' length of quarter-hours (2,880 a month), against millions from startsAt.
    assert walked[0] < 20_000


def test_an_hourly_window_from_1700_is_on_at_half_past_midnight_every_hour_since() -> None:
    schedule = FAR_PAST[0]
    assert active(schedule, datetime(2026, 11, 26, 10, 29, 59, tzinfo=UTC))
    assert not active(schedule, datetime(2026, 11, 26, 10, 30, tzinfo=UTC))
    assert occurrence_at(schedule, datetime(2026, 11, 26, 10, 15, tzinfo=UTC)) == (
        datetime(2026, 11, 26, 10, tzinfo=UTC),
        datetime(2026, 11, 26, 10, 30, tzinfo=UTC),
    )
    assert next_start(schedule, datetime(2026, 11, 26, 10, 15, tzinfo=UTC)) == datetime(
        2026, 11, 26, 11, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;COUNT=1000", "within 20 years"),
        ("FREQ=HOURLY;COUNT=1001", "COUNT must be between 1 and 1000"),
        ("FREQ=HOURLY;BYMINUTE=0,10,20,30,40", "at most 4 minutes"),
        ("FREQ=DAILY;COUNT=3;UNTIL=20300101T000000Z", "COUNT or UNTIL"),
    ],
)
def test_a_rule_whose_walk_would_be_long_is_refused_after_little_work(
    rule: str, reason: str, walked: list[int]
) -> None:
    start = datetime(2028, 1, 1, tzinfo=UTC)
    with pytest.raises(BadSchedule, match=reason):
        validate(Schedule(start, start + timedelta(minutes=30), rule))
    assert walked[0] <= 1_000


def test_a_count_series_is_followed_once_then_started_near_each_moment(walked: list[int]) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    schedule = Schedule(start, start + timedelta(minutes=10), "FREQ=HOURLY;COUNT=1000")
    validate(schedule)
    done = walked[0]
    last = start + timedelta(hours=999)
    assert occurrence_at(schedule, last + timedelta(minutes=5)) == (
        last,
        last + timedelta(minutes=10),
    )
    assert not active(schedule, last + timedelta(hours=1, minutes=5))
    assert next_start(schedule, last) is None
    assert walked[0] - done < 100


@pytest.mark.parametrize("count", [5, 6, 7, 8])
def test_a_count_series_ending_by_a_spring_forward_gap_keeps_each_of_its_occurrences(
    count: int,
) -> None:
    """Its last occurrence is compared on the rule's wall clock, as dateutil counts: in UTC,
    a time in the gap ended the series early (5 of 7) or let two more through (8 of 6)."""
    start = datetime(2024, 3, 30, 23, tzinfo=UTC)
    rule = f"FREQ=HOURLY;BYMINUTE=0,30;COUNT={count}"
    schedule = Schedule(start, start + timedelta(minutes=10), rule, "Europe/Paris")
    validate(schedule)
    walked = [
        s.astimezone(UTC)
        for s in rrulestr(rule, dtstart=start.astimezone(ZoneInfo("Europe/Paris")))
    ]
    found = [s for s, _ in occurrences(schedule, start, start + timedelta(hours=12))]
    assert found == walked
    moment = datetime(2024, 3, 31, 1, 15, tzinfo=UTC)
    assert next_start(schedule, moment) == next((s for s in walked if s > moment), None)


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("FREQ=HOURLY;INTERVAL=168;BYDAY=TU", "whole weeks"),
        ("FREQ=DAILY;INTERVAL=14;BYDAY=TU", "whole weeks"),
        ("FREQ=MONTHLY;INTERVAL=12;BYMONTH=6", "whole years"),
        ("FREQ=MONTHLY;BYDAY=6MO", "from 1 to 5"),
        ("FREQ=YEARLY;BYMONTH=1;BYDAY=-6FR", "from 1 to 5"),
        ("FREQ=YEARLY;BYDAY=53MO", "from 1 to 52"),
    ],
)
def test_a_step_that_can_never_land_on_its_filters_is_refused_before_any_walk(
    rule: str, reason: str, walked: list[int]
) -> None:
    """dateutil walked to the year 9999 (1-2 s) before saying these never occur."""
    start = datetime(2024, 1, 1, tzinfo=UTC)  # a Monday
    with pytest.raises(BadSchedule, match=reason):
        validate(Schedule(start, start + timedelta(minutes=30), rule))
    assert walked[0] == 0
