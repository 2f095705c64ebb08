"""Quiet hours: the pure rule, and alerts suppressed in the owner's time zone."""

from __future__ import annotations

import zoneinfo
from collections.abc import AsyncIterator
from datetime import UTC, datetime, time, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, eventually
from tests.factories import change_settings, ingest, log_in, post_in_project
from tests.receivers import Receiver
from upwatch.kit.clock import ManualClock
from upwatch.notifications.rules import in_quiet_hours, local_time, suppression
from upwatch.runtime import Runtime

times = st.times().map(lambda t: t.replace(second=0, microsecond=0))


def test_a_window_that_wraps_midnight_covers_late_evening_and_early_morning() -> None:
    start, end = time(22, 0), time(6, 0)
    assert in_quiet_hours(time(22, 0), start, end)
    assert in_quiet_hours(time(23, 30), start, end)
    assert in_quiet_hours(time(0, 0), start, end)
    assert in_quiet_hours(time(5, 59), start, end)
    assert not in_quiet_hours(time(6, 0), start, end)
    assert not in_quiet_hours(time(12, 0), start, end)
    assert not in_quiet_hours(time(21, 59), start, end)


def test_a_daytime_window_covers_its_start_but_not_its_end() -> None:
    assert in_quiet_hours(time(9, 0), time(9, 0), time(17, 0))
    assert not in_quiet_hours(time(17, 0), time(9, 0), time(17, 0))


@given(local=times, start=times, end=times)
def test_a_wrapping_window_is_exactly_what_the_day_window_between_its_ends_is_not(
    local: time, start: time, end: time
) -> None:
    if start == end:
        assert not in_quiet_hours(local, start, end)
    else:
        assert in_quiet_hours(local, start, end) != in_quiet_hours(local, end, start)


def test_local_time_is_read_in_the_zone_including_daylight_saving() -> None:
    summer = datetime(2026, 7, 1, 21, 30, tzinfo=UTC)
    winter = datetime(2026, 1, 1, 21, 30, tzinfo=UTC)
    assert local_time(summer, "Europe/Berlin") == time(23, 30)
    assert local_time(winter, "Europe/Berlin") == time(22, 30)
    assert local_time(winter, "No/Such_Zone") == time(21, 30)


def test_suppression_names_the_reason() -> None:
    now = datetime(2026, 1, 1, 23, 0, tzinfo=UTC)
    common: dict[str, Any] = {
        "channel": "email",
        "channels_in_plan": ("email",),
        "timezone": "UTC",
        "now": now,
    }
    assert suppression(enabled=False, quiet_start=None, quiet_end=None, **common) == (
        "provider disabled"
    )
    quiet = suppression(enabled=True, quiet_start="22:00", quiet_end="06:00", **common)
    assert quiet is not None
    assert "quiet hours" in quiet
    assert suppression(enabled=True, quiet_start=None, quiet_end=None, **common) is None
    ending = suppression(
        enabled=True,
        quiet_start="22:00",
        quiet_end="06:00",
        ends_a_delivered_alert=True,
        **common,
    )
    assert ending is None
    outside_plan = {**common, "channels_in_plan": ("slack",)}
    assert suppression(enabled=True, quiet_start=None, quiet_end=None, **outside_plan) == (
        "email is not in the owner's plan"
    )


# ---- through the API, with a controlled clock ----

TOKYO = zoneinfo.ZoneInfo("Asia/Tokyo")


settings_overrides = overriding(allow_private_targets=True)


@pytest.fixture
async def target() -> AsyncIterator[Receiver]:
    server = await Receiver().start()
    yield server
    await server.stop()


def _tokyo(day: datetime, hour: int, minute: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=TOKYO).astimezone(UTC)


async def test_alerts_in_the_owners_quiet_hours_are_recorded_as_suppressed_not_sent(
    client: httpx.AsyncClient,
    cast: Cast,
    app: FastAPI,
    runtime: Runtime,
    target: Receiver,
    mailbox: Any,
    clock: ManualClock,
    as_alice: InProject,
) -> None:
    settings = await change_settings(client, cast.alice, timezone="Asia/Tokyo")
    assert settings.status_code == 200, settings.text
    provider = await post_in_project(
        client,
        cast.bob,
        cast.project_id,
        "/notification-providers",
        type="email",
        name="Night pager",
        config={"to": ["oncall@example.com"]},
        quietHoursStart="22:00",
        quietHoursEnd="06:00",
    )
    assert provider.status_code == 201, provider.text
    monitor = await as_alice.post("/monitors", name="API", type="http", url=target.url())
    monitor_id = monitor.json()["id"]

    # With the manual clock no scheduled check ever comes due: the checks below are all.
    day = clock.now() + timedelta(days=1)
    # 23:30 and 05:59 in Tokyo are 14:30 and 20:59 UTC: quiet only when read in Tokyo.
    for at, ok in (
        (_tokyo(day, 23, 30), False),
        (_tokyo(day + timedelta(days=1), 5, 59), True),
        (_tokyo(day + timedelta(days=1), 6, 0), False),
        # In quiet hours again, but the outage alert went out: its end is announced too.
        (_tokyo(day + timedelta(days=1), 22, 30), True),
    ):
        clock.advance(at - clock.now())
        await ingest(app.state.engine, monitor_id, at, ok=ok)

    # A day later Alice's access token has expired: sign in again.
    login = await log_in(client, cast.alice.email, cast.alice.password)
    headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
    incidents = await client.get("/incidents", headers=headers, params={"monitorId": monitor_id})
    night, morning = sorted(incidents.json(), key=lambda i: i["startedAt"])
    night_alerts = (await client.get(f"/incidents/{night['id']}/alerts", headers=headers)).json()
    assert [(a["event"], a["status"]) for a in night_alerts] == [
        ("incident.opened", "suppressed"),
        ("incident.resolved", "suppressed"),
    ]
    assert all("quiet hours 22:00-06:00 (Asia/Tokyo)" in a["reason"] for a in night_alerts)
    assert all(a["attempts"] == [] for a in night_alerts)

    async def morning_sent() -> bool:
        alerts = await client.get(f"/incidents/{morning['id']}/alerts", headers=headers)
        return [a["status"] for a in alerts.json()] == ["sent", "sent"]

    await eventually(morning_sent)
    subjects = [m["Subject"] for m in mailbox.to("oncall@example.com")]
    assert subjects == ["DOWN: API", "UP: API is back after 16h 30m"]
