"""The 24-hour uptime, read from hour counts and the raw results of the window's first
partial hour, is exactly the one counted over every raw result of the last 24 hours."""

from __future__ import annotations

from datetime import timedelta

import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject
from tests.factories import ingest, log_in
from upwatch.kit.clock import ManualClock

settings_overrides = overriding(allow_private_targets=True)


async def test_the_24_hour_uptime_from_hour_counts_equals_the_count_of_raw_results(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    now = clock.now()
    # Every 37 minutes over 28 hours: some in the hour where the window begins, some before it.
    checks = [(now - timedelta(minutes=37 * n), n % 3 != 0) for n in range(46)]
    for at, ok in checks:
        await ingest(app.state.engine, monitor["id"], at, ok)
    window = [ok for at, ok in checks if at >= now - timedelta(hours=24)]
    expected = round(100 * sum(window) / len(window), 3)

    answer = await client.get("/dashboard/uptime", headers=cast.alice.headers)
    assert answer.status_code == 200, answer.text
    [row] = [r for r in answer.json() if r["monitorId"] == monitor["id"]]
    assert row["uptime24h"] == expected
    assert expected != round(100 * sum(ok for _at, ok in checks) / len(checks), 3)

    # An hour later the window has moved on: the oldest checks of it are left out.
    clock.advance(timedelta(hours=1))
    later = [ok for at, ok in checks if at >= clock.now() - timedelta(hours=24)]
    # (a new token: the first one expired meanwhile)
    login = await log_in(client, cast.alice.email, cast.alice.password)
    headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
    rows = (await client.get("/dashboard/uptime", headers=headers)).json()
    [row] = [r for r in rows if r["monitorId"] == monitor["id"]]
    assert row["uptime24h"] == round(100 * sum(later) / len(later), 3)


async def test_a_monitor_keeps_its_last_20_response_times_in_the_order_they_were_checked(
    app: FastAPI, client: httpx.AsyncClient, clock: ManualClock, as_alice: InProject
) -> None:
    from upwatch.models import Monitor

    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    now = clock.now()
    for n in range(25):
        at = now - timedelta(minutes=25 - n)
        await ingest(app.state.engine, monitor["id"], at, True, float(n))
    await ingest(app.state.engine, monitor["id"], now - timedelta(hours=3), True, 999.0)  # late
    await ingest(app.state.engine, monitor["id"], now, False)  # no response time
    async with app.state.runtime.db.sessionmaker() as session:
        stored = await session.get(Monitor, monitor["id"])
        assert stored is not None
        assert stored.recent_ms == [float(n) for n in range(6, 25)] + [None]
