"""Heartbeat evaluation: a pure function of timestamps, so no clock and no sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from upwatch.probes.heartbeat import BadSchedule, heartbeat_outcome, validate_schedule
from upwatch.probes.outcome import ErrorKind

CREATED = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
INTERVAL = 300
GRACE = 60


def at(seconds: int) -> datetime:
    return CREATED + timedelta(seconds=seconds)


def test_a_ping_within_the_interval_keeps_the_monitor_up() -> None:
    outcome = heartbeat_outcome(at(600), CREATED, at(800), INTERVAL, GRACE)

    assert outcome.ok
    assert outcome.error_kind is None
    assert outcome.details["lastPingAt"] == "2025-03-01T12:10:00Z"


def test_a_ping_late_but_within_the_grace_keeps_the_monitor_up() -> None:
    assert heartbeat_outcome(at(600), CREATED, at(600 + INTERVAL + GRACE), INTERVAL, GRACE).ok


def test_no_ping_after_interval_and_grace_is_a_missed_heartbeat() -> None:
    outcome = heartbeat_outcome(at(600), CREATED, at(600 + INTERVAL + GRACE + 1), INTERVAL, GRACE)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.MISSED_HEARTBEAT
    assert outcome.error == (
        "no ping since 2025-03-01T12:10:00Z (expected every 300s with 60s grace; 1s overdue)"
    )
    assert outcome.details["deadline"] == "2025-03-01T12:16:00Z"


def test_a_new_monitor_gets_one_full_period_for_its_first_ping() -> None:
    assert heartbeat_outcome(None, CREATED, at(INTERVAL + GRACE), INTERVAL, GRACE).ok


def test_a_new_monitor_that_never_got_a_ping_is_down_after_its_first_period() -> None:
    outcome = heartbeat_outcome(None, CREATED, at(INTERVAL + GRACE + 30), INTERVAL, GRACE)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.MISSED_HEARTBEAT
    assert outcome.error is not None
    assert outcome.error.startswith("no ping since the monitor was created at 2025-03-01T12:00:00Z")


# Cron schedules, against a brute force that walks the wall clock minute by minute.

# Whole, half and three-quarter offsets, none with daylight saving: the brute force walks
# wall-clock minutes, and a minute a DST change skips (St John's 02:00 in March) is no time
# at all; how a schedule meets those is the DST test below.
ZONES = ["UTC", "Asia/Kolkata", "Asia/Kathmandu"]


def _field(values: list[int] | None, step: int | None) -> str:
    if values:
        return ",".join(str(v) for v in sorted(set(values)))
    return f"*/{step}" if step else "*"


def _matches(spec: str, value: int) -> bool:
    if spec == "*":
        return True
    if spec.startswith("*/"):
        return value % int(spec[2:]) == 0
    return value in {int(v) for v in spec.split(",")}


schedules = st.builds(
    lambda minutes, minute_step, hours, hour_step, weekdays: " ".join(
        [
            _field(minutes, minute_step),
            _field(hours, hour_step),
            "*",
            "*",
            _field(weekdays, None),
        ]
    ),
    st.none() | st.lists(st.integers(0, 59), min_size=1, max_size=3),
    st.none() | st.sampled_from([5, 15, 30]),
    st.none() | st.lists(st.integers(0, 23), min_size=1, max_size=2),
    st.none() | st.sampled_from([2, 6]),
    st.none() | st.lists(st.integers(0, 6), min_size=1, max_size=2),
)


def brute_next(schedule: str, zone: str, after: datetime) -> datetime:
    minute, hour, _, _, weekday = schedule.split()
    local = after.astimezone(ZoneInfo(zone)).replace(second=0, microsecond=0)
    moment = local + timedelta(minutes=1)
    while True:
        cron_weekday = (moment.weekday() + 1) % 7  # cron: Sunday is 0
        if (
            _matches(minute, moment.minute)
            and _matches(hour, moment.hour)
            and _matches(weekday, cron_weekday)
        ):
            return moment
        moment += timedelta(minutes=1)


@given(
    schedules,
    st.sampled_from(ZONES),
    st.integers(0, 10 * 24 * 3600),  # last ping, seconds after creation
    st.integers(0, 10 * 24 * 3600),  # now, seconds after the last ping
    st.integers(0, 3600),
)
def test_a_cron_heartbeat_is_up_exactly_until_the_next_scheduled_time_plus_grace(
    schedule: str, zone: str, ping: int, later: int, grace: int
) -> None:
    last_ping = at(ping)
    now = last_ping + timedelta(seconds=later)
    outcome = heartbeat_outcome(last_ping, CREATED, now, INTERVAL, grace, schedule, zone)
    expected = brute_next(schedule, zone, last_ping)
    assert outcome.ok == (now <= expected + timedelta(seconds=grace))
    assert datetime.fromisoformat(str(outcome.details["expectedAt"])) == expected


def test_a_daily_schedule_follows_the_wall_clock_of_its_zone_across_a_dst_change() -> None:
    # 02:30 Paris every day; on 29 March 2026 the clocks skip from 02:00 to 03:00.
    before = datetime(2026, 3, 27, 1, 30, tzinfo=UTC)  # 02:30 Paris, winter time
    outcome = heartbeat_outcome(before, CREATED, before, 60, 0, "30 2 * * *", "Europe/Paris")
    assert outcome.details["expectedAt"] == "2026-03-28T02:30:00+01:00"
    after = datetime(2026, 3, 30, 0, 30, tzinfo=UTC)  # 02:30 Paris, summer time
    outcome = heartbeat_outcome(after, CREATED, after, 60, 0, "30 2 * * *", "Europe/Paris")
    assert outcome.details["expectedAt"] == "2026-03-31T02:30:00+02:00"


@given(st.integers(0, 3600), st.integers(-600, 600), st.integers(0, 7200), st.booleans())
def test_a_failure_reported_after_the_last_success_is_down_until_the_next_success(
    ping: int, fail_offset: int, later: int, with_schedule: bool
) -> None:
    last_ping, failed = at(ping), at(ping + fail_offset)
    now = max(last_ping, failed) + timedelta(seconds=later % 60)  # on time by the clock
    schedule = "* * * * *" if with_schedule else None
    outcome = heartbeat_outcome(
        last_ping, CREATED, now, 3600, 3600, schedule, "UTC", last_fail_at=failed
    )
    assert outcome.ok == (failed <= last_ping)
    if not outcome.ok:
        assert outcome.error is not None
        assert "reported a failure" in outcome.error


def test_a_started_job_that_reports_no_success_within_the_grace_is_down() -> None:
    started = at(1000)
    running = heartbeat_outcome(
        at(900), CREATED, at(1000 + GRACE), 3600, GRACE, None, "UTC", started
    )
    assert running.ok
    hung = heartbeat_outcome(at(900), CREATED, at(1001 + GRACE), 3600, GRACE, None, "UTC", started)
    assert not hung.ok
    assert hung.error is not None
    assert hung.error.startswith("the job started at 2025-03-01T12:16:40Z")
    finished = heartbeat_outcome(at(1030), CREATED, at(2000), 3600, GRACE, None, "UTC", started)
    assert finished.ok


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("* * * *", "five fields"),
        ("* * * * * *", "five fields"),  # seconds are not cron
        ("61 * * * *", "not a cron schedule"),
        ("0 0 30 2 *", "no time within a year"),
        ("@reboot", "five fields"),
        ("0 0 29 2 *", "no time within a year"),  # every fourth year only
        ("0 0 * * R", "random"),
        ("H 2 * * *", "random"),
    ],
)
def test_a_schedule_that_cannot_work_is_refused_saying_why(schedule: str, why: str) -> None:
    with pytest.raises(BadSchedule, match=why):
        validate_schedule(schedule, "UTC", CREATED)
