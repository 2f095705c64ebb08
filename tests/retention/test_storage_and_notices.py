"""usage.storage measured from the rows kept, the storage limit bringing expiry forward, and
GET /retention/notifications as a client meets it."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from tests.app_settings import overriding, plans
from tests.conftest import Cast, SignUp, assert_problem
from tests.factories import Target
from tests.retention.conftest import (
    MONDAY,
    headers_of,
    ingest_old,
    job_of,
    monitor_of,
    notices,
    old_results,
    project_of,
)
from upwatch.kit.clock import ManualClock
from upwatch.models import DailyAggregate, RetentionNotice
from upwatch.retention.service import RESULT_BYTES
from upwatch.runtime import Runtime


async def _storage_mb(client: httpx.AsyncClient, headers: dict[str, str]) -> float:
    response = await client.get("/subscriptions/current", headers=headers)
    assert response.status_code == 200, response.text
    return float(response.json()["usage"]["storage"]["current"])


async def test_notices_need_a_token_and_show_only_the_callers_own(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, runtime: Runtime, target: Target
) -> None:
    assert_problem(await client.get("/retention/notifications"), 401)
    monitor = await monitor_of(client, cast.alice, cast.project_id, target)
    await ingest_old(app, monitor, [50])
    await job_of(runtime).run_once()
    assert len(await notices(client, cast.alice)) == 1
    assert await notices(client, cast.charlie) == []


async def test_storage_counts_kept_results_and_drops_when_they_are_purged(
    client: httpx.AsyncClient, sign_up: SignUp, app: FastAPI, runtime: Runtime,
    clock: ManualClock, target: Target,
) -> None:  # fmt: skip
    dave = await sign_up("dave@example.com")
    monitor = await monitor_of(client, dave, await project_of(client, dave), target)
    empty = await _storage_mb(client, dave.headers)
    await ingest_old(app, monitor, [45] * 10 + [3] * 5)
    grown = await _storage_mb(client, dave.headers)
    assert grown - empty == pytest.approx(15 * RESULT_BYTES / 1024 / 1024, abs=1e-5)

    job = job_of(runtime)
    await job.run_once()  # measures up to yesterday; today's rows come from today's counts
    assert await _storage_mb(client, dave.headers) == pytest.approx(grown, abs=1e-5)
    clock.advance(timedelta(days=7))
    await job.run_once()
    assert await old_results(runtime, monitor) == 5
    shrunk = await _storage_mb(client, await headers_of(client, dave))
    assert grown - shrunk == pytest.approx(10 * RESULT_BYTES / 1024 / 1024, rel=0.2)


async def test_an_accounts_notices_go_with_the_account(
    client: httpx.AsyncClient, sign_up: SignUp, app: FastAPI, runtime: Runtime, target: Target
) -> None:
    dave = await sign_up("dave@example.com")
    monitor = await monitor_of(client, dave, await project_of(client, dave), target)
    await ingest_old(app, monitor, [50])
    await job_of(runtime).run_once()
    assert len(await notices(client, dave)) == 1
    assert (await client.delete("/users/me", headers=dave.headers)).status_code == 200
    async with runtime.db.readsession() as session:
        assert await session.scalar(select(func.count()).select_from(RetentionNotice)) == 0


class TestOverTheStorageLimit:
    settings_overrides = overriding(
        allow_private_targets=True,
        plans_file=plans("[plans.free]\nstorageLimit = 1\n"),  # one megabyte
    )

    async def test_the_oldest_raw_results_are_announced_early_and_aggregates_stay(
        self, client: httpx.AsyncClient, sign_up: SignUp, app: FastAPI, runtime: Runtime,
        target: Target,
    ) -> None:  # fmt: skip
        dave = await sign_up("dave@example.com")
        monitor = await monitor_of(client, dave, await project_of(client, dave), target)
        await ingest_old(app, monitor, [20, 12, 2])
        # Counts as if 4,000 checks a day had run on the days 20 to 10 ago: about 0.8 MB
        # a day, so only the last days fit in the megabyte.
        async with runtime.db.sessionmaker() as session:
            for days in range(10, 21):
                day = (MONDAY - timedelta(days=days)).date().isoformat()
                row = await session.get(DailyAggregate, (monitor, "local", day))
                if row is None:
                    session.add(
                        DailyAggregate(monitor_id=monitor, region_id="local", day=day, total=4000)
                    )
                else:
                    row.total = 4000
            await session.commit()
        assert await _storage_mb(client, dave.headers) > 1
        await job_of(runtime).run_once()
        [notice] = await notices(client, dave)
        # Within the plan's 30 days, yet announced: the results of 20 and 12 days ago.
        assert notice["dataType"] == "check_results"
        assert notice["metadata"]["count"] == 2
