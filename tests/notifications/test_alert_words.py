"""The words of an alert match the monitor's state: a slow monitor is degraded, not down."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from upwatch.notifications.events import AlertEvent, EventKind, Failure

SINCE = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def _event(kind: EventKind, failure_kind: str) -> AlertEvent:
    return AlertEvent(
        kind=kind,
        delivery_id="d1",
        occurred_at=SINCE + timedelta(minutes=30),
        project_id="p1",
        project_name="Shop",
        monitor_id="m1",
        monitor_name="Checkout",
        incident_id="i1",
        failure=Failure(kind=failure_kind, message="p95 1.2 s", status_code=None),
        since=SINCE,
    )


def test_a_reminder_of_a_degraded_monitor_says_still_degraded_and_degraded_since() -> None:
    reminder = _event(EventKind.REMINDER, "degraded")
    assert reminder.headline == "STILL DEGRADED: Checkout for 30m, not acknowledged"
    assert "Degraded since: 2026-11-27T09:00:00Z" in reminder.lines()
    assert ("Degraded since", "2026-11-27T09:00:00Z") in reminder.facts()
    assert "down" not in reminder.text.lower()


def test_a_reminder_of_a_failing_monitor_still_says_down() -> None:
    reminder = _event(EventKind.REMINDER, "timeout")
    assert reminder.headline == "STILL DOWN: Checkout for 30m, not acknowledged"
    assert ("Down since", "2026-11-27T09:00:00Z") in reminder.facts()
    assert _event(EventKind.OPENED, "timeout").headline == "DOWN: Checkout"
    assert _event(EventKind.OPENED, "degraded").headline == "DEGRADED: Checkout"
