"""API call metering per account and UTC day (contract §11)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from tests.app_settings import fixture_value, overriding
from tests.conftest import REDIS_URL, Account, SignUp, assert_problem
from tests.factories import log_in
from upwatch.callers.metering import MemoryMeter, seconds_until_next_day
from upwatch.kit.clock import ManualClock
from upwatch.models import ApiUsage
from upwatch.runtime import Runtime


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    path = tmp_path / "plans.toml"
    path.write_text("[plans.free]\napiCallsPerDay = 5\n")
    return path


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 11, 22, 23, 0, tzinfo=UTC))


settings_overrides = overriding(plans_file=fixture_value("plans_file"), usage_flush_seconds=3600)


async def test_authenticated_responses_carry_ratelimit_headers(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.get("/users/me", headers=alice.headers)
    assert response.headers["RateLimit-Limit"] == "5"
    assert response.headers["RateLimit-Remaining"] == "4"
    assert response.headers["RateLimit-Reset"] == "3600"


async def test_past_api_calls_per_day_requests_get_429_until_the_next_utc_day(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    statuses = [
        (await client.get("/users/me", headers=alice.headers)).status_code for _ in range(6)
    ]
    assert statuses == [200] * 5 + [429]
    refused = await client.get("/users/me", headers=alice.headers)
    problem = assert_problem(refused, 429)
    assert "apiCallsPerDay" in problem["detail"]
    assert refused.headers["Retry-After"] == "3600"
    assert refused.headers["RateLimit-Remaining"] == "0"

    clock.advance(timedelta(hours=1))
    login = await log_in(client, alice.email)
    fresh = {"Authorization": f"Bearer {login.json()['access_token']}"}
    response = await client.get("/users/me", headers=fresh)
    assert response.status_code == 200
    assert response.headers["RateLimit-Remaining"] == "4"


async def test_metering_is_per_account(
    client: httpx.AsyncClient, sign_up: SignUp, alice: Account
) -> None:
    bob = await sign_up("bob@example.com")
    for _ in range(5):
        await client.get("/users/me", headers=alice.headers)
    assert (await client.get("/users/me", headers=bob.headers)).status_code == 200


async def test_unauthenticated_requests_are_not_counted(
    client: httpx.AsyncClient, alice: Account
) -> None:
    for _ in range(10):
        await client.get("/healthz")
        await log_in(client, alice.email, "wrong")
    assert (await client.get("/users/me", headers=alice.headers)).headers[
        "RateLimit-Remaining"
    ] == "4"


async def test_counts_are_flushed_in_batches_and_survive_a_new_meter(
    client: httpx.AsyncClient, alice: Account, runtime: Runtime, clock: ManualClock
) -> None:
    for _ in range(3):
        await client.get("/users/me", headers=alice.headers)
    async with runtime.db.sessionmaker() as session:
        assert (await session.scalars(select(ApiUsage))).all() == []  # nothing written yet
    await runtime.meter.flush()
    async with runtime.db.sessionmaker() as session:
        [row] = (await session.scalars(select(ApiUsage))).all()
    assert (row.user_id, row.day, row.count) == (alice.id, "2026-11-22", 3)

    # A restarted process reads the day's count back instead of starting from zero.
    fresh = MemoryMeter(runtime.db, clock, 3600)
    async with runtime.db.sessionmaker() as session:
        assert await fresh.today(session, alice.id) == 3
        assert await fresh.admit(session, alice.id, 5) == 4


def test_seconds_until_next_day_counts_to_utc_midnight() -> None:
    assert seconds_until_next_day(datetime(2026, 1, 1, 23, 59, 30, tzinfo=UTC)) == 30
    assert seconds_until_next_day(datetime(2026, 1, 1, 0, 0, tzinfo=UTC)) == 86400


class TestWithMeteringOff:
    settings_overrides = overriding(plans_file=fixture_value("plans_file"), api_metering=False)

    async def test_nothing_is_counted_or_refused(
        self, client: httpx.AsyncClient, alice: Account
    ) -> None:
        for _ in range(8):
            response = await client.get("/users/me", headers=alice.headers)
            assert response.status_code == 200
        assert "RateLimit-Limit" not in response.headers


async def test_many_first_requests_at_once_do_not_exhaust_the_connection_pool(
    client: httpx.AsyncClient, sign_up: SignUp, alice: Account
) -> None:
    bob = await sign_up("bob@example.com")
    # More concurrent requests than the pool has connections, each the first of its account's
    # day in this meter: a request must not wait for a second connection while holding one.
    burst = [client.get("/healthz")] + [
        client.get("/subscriptions/current", headers=account.headers)
        for account in [alice, bob] * 12
    ]
    responses = await asyncio.wait_for(asyncio.gather(*burst), timeout=20)
    assert {r.status_code for r in responses} <= {200, 429}


class TestCountingInRedis:
    """With UPWATCH_REDIS_URL, counts live in Redis and every API process shares them."""

    settings_overrides = overriding(
        plans_file=fixture_value("plans_file"), redis_url=fixture_value("redis_url")
    )

    async def test_the_limit_holds_across_two_api_processes(
        self, client: httpx.AsyncClient, sign_up: SignUp, runtime: Runtime, clock: ManualClock
    ) -> None:
        from upwatch.callers.metering import RedisMeter

        alice = await sign_up("alice@example.com")
        for _ in range(3):
            assert (await client.get("/users/me", headers=alice.headers)).status_code == 200
        # A second process's meter sees the same count and takes the remaining two.
        other = RedisMeter(REDIS_URL, clock)
        try:
            async with runtime.db.sessionmaker() as session:
                assert await other.today(session, alice.id) == 3
                assert await other.admit(session, alice.id, 5) == 4
        finally:
            await other.redis.aclose()
        assert (await client.get("/users/me", headers=alice.headers)).status_code == 200
        refused = await client.get("/users/me", headers=alice.headers)
        assert_problem(refused, 429)
        assert refused.headers["Retry-After"] == "3600"
        usage = await client.get("/subscriptions/current", headers=alice.headers)
        assert usage.status_code == 429  # the daily allowance is spent for every route
