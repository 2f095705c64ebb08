"""With Redis configured, throttles hold across API processes: two apps, one limit."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.app_settings import fixture_value, overriding
from tests.conftest import PASSWORD, SignUp, assert_problem, forget_redis_keys, lifespan
from tests.contact.test_contact import MESSAGE
from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.kit.clock import ManualClock

PREFIX = f"test-{uuid.uuid4().hex}"


settings_overrides = overriding(
    redis_url=fixture_value("redis_url"), broker_prefix=PREFIX, login_failures_allowed=4
)


@pytest.fixture
async def other(settings: Settings, clock: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    """A second API process: its own app, the same database and Redis."""
    application = create_app(settings, clock)
    async with lifespan(application):
        transport = httpx.ASGITransport(app=application, client=("203.0.113.7", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as c:
            yield c
    await forget_redis_keys(settings.redis_url, PREFIX)


async def test_failed_logins_count_across_api_processes(
    client: httpx.AsyncClient, other: httpx.AsyncClient, sign_up: SignUp
) -> None:
    await sign_up("alice@example.com")
    wrong = {"email": "alice@example.com", "password": "not the password"}
    for api in (client, other, client, other):  # four failures, the limit, split in two
        assert_problem(await api.post("/auth/login", json=wrong), 401)
    right = {"email": "alice@example.com", "password": PASSWORD}
    for api in (client, other):
        refused = await api.post("/auth/login", json=right)
        assert_problem(refused, 429)
        assert int(refused.headers["Retry-After"]) > 0


async def test_contact_submissions_count_across_api_processes(
    client: httpx.AsyncClient, other: httpx.AsyncClient
) -> None:
    for n in range(5):  # the default limit per client address
        api = client if n % 2 else other
        assert (await api.post("/contact", json=MESSAGE)).status_code == 201
    assert_problem(await client.post("/contact", json=MESSAGE), 429)
    assert_problem(await other.post("/contact", json=MESSAGE), 429)
