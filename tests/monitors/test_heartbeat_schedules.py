"""Heartbeat monitors over HTTP: a cron schedule in a time zone, a grace, and the job's own
start and failure pings, read at the controlled clock's now."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import create_monitor
from upwatch.kit.clock import ManualClock

# The clock moves up to an hour; the cast's tokens must outlive that.
settings_overrides = overriding(allow_private_targets=True, access_token_minutes=240)


async def heartbeat(client: httpx.AsyncClient, cast: Cast, **fields: Any) -> dict[str, Any]:
    return await create_monitor(
        client, cast.alice, cast.project_id, type="heartbeat", intervalSeconds=300, **fields
    )


async def check(client: httpx.AsyncClient, cast: Cast, monitor: dict[str, Any]) -> dict[str, Any]:
    result = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert result.status_code == 200, result.text
    body: dict[str, Any] = result.json()
    return body


async def test_a_cron_heartbeat_is_late_after_its_next_scheduled_time_plus_grace(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    monitor = await heartbeat(
        client, cast, schedule="0 * * * *", timezone="Asia/Kolkata", graceSeconds=120
    )
    assert (monitor["schedule"], monitor["timezone"], monitor["graceSeconds"]) == (
        "0 * * * *",
        "Asia/Kolkata",
        120,
    )
    ping = monitor["heartbeatUrl"].removeprefix("http://upwatch.test")
    assert (await client.get(ping)).json() == {"ok": True}
    # Kolkata is UTC+05:30, so "minute 0" there is minute 30 in UTC.
    now = clock.now()
    expected = now.replace(minute=30, second=0, microsecond=0)
    if expected <= now:
        expected += timedelta(hours=1)
    clock.advance(expected + timedelta(seconds=120) - now)
    on_time = await check(client, cast, monitor)
    assert on_time["status"] == "up", on_time
    clock.advance(timedelta(seconds=1))
    late = await check(client, cast, monitor)
    assert late["status"] == "down", late
    assert "expected by '0 * * * *' (Asia/Kolkata) with 120s grace" in late["error"]


async def test_the_job_reports_its_start_and_its_failure(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    monitor = await heartbeat(client, cast, graceSeconds=60)
    ping = monitor["heartbeatUrl"].removeprefix("http://upwatch.test")
    assert (await client.post(ping)).status_code == 200
    assert (await check(client, cast, monitor))["status"] == "up"

    clock.advance(timedelta(seconds=1))
    assert (await client.post(f"{ping}/fail")).json() == {"ok": True}
    failed = await check(client, cast, monitor)
    assert failed["status"] == "down"
    assert "reported a failure" in failed["error"]
    clock.advance(timedelta(seconds=1))
    assert (await client.get(ping)).status_code == 200  # it ran again and succeeded
    assert (await check(client, cast, monitor))["status"] == "up"

    clock.advance(timedelta(seconds=1))
    assert (await client.get(f"{ping}/start")).status_code == 200
    clock.advance(timedelta(seconds=60))
    assert (await check(client, cast, monitor))["status"] == "up"  # still within the grace
    clock.advance(timedelta(seconds=1))
    hung = await check(client, cast, monitor)
    assert hung["status"] == "down"
    assert "did not report success within 60s" in hung["error"]
    shown = await client.get(f"/monitors/{monitor['id']}", headers=cast.bob.headers)
    assert shown.json()["lastStartAt"] is not None
    assert shown.json()["lastFailAt"] is not None
    for report in ("start", "fail"):
        assert_problem(await client.post(f"/heartbeat/not-a-token/{report}"), 404)
        assert_problem(await client.get(f"/heartbeat/not-a-token/{report}"), 404)


async def test_a_schedule_that_cannot_work_or_is_not_a_heartbeats_is_refused(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    for fields, field in (
        ({"schedule": "* * * *"}, "schedule"),
        ({"schedule": "0 0 30 2 *"}, "schedule"),
        ({"schedule": "@reboot"}, "schedule"),
        ({"schedule": "0 2 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"graceSeconds": -1}, "graceSeconds"),
        ({"graceSeconds": 86_401}, "graceSeconds"),
    ):
        refused = await as_alice.post(
            "/monitors", name="Backup", type="heartbeat", intervalSeconds=300, **fields
        )
        assert field in assert_problem(refused, 422)["detail"], fields
    for field, value in (("schedule", "0 2 * * *"), ("timezone", "UTC"), ("graceSeconds", 5)):
        refused = await as_alice.post(
            "/monitors",
            name="Shop",
            type="http",
            url="http://127.0.0.1:9/",
            intervalSeconds=300,
            **{field: value},
        )
        assert "only heartbeat monitors" in assert_problem(refused, 422)["detail"]
    monitor = await heartbeat(client, cast, schedule="0 2 * * *")
    path = f"/monitors/{monitor['id']}"
    bad = await client.patch(path, headers=cast.alice.headers, json={"schedule": "0 0 31 4 *"})
    assert "schedule" in assert_problem(bad, 422)["detail"]
    cleared = await client.patch(path, headers=cast.alice.headers, json={"schedule": None})
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["schedule"] is None  # back to every intervalSeconds
