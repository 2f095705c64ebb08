"""Heartbeat evaluation: a pure function of timestamps, so no clock and no sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from upwatch.probes.heartbeat import heartbeat_outcome
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
