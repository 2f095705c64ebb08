"""Database monitors (postgres, mysql, redis) through the API: checked now, up and down, and
the password in their URL never shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app_settings import overriding, plans
from tests.client.test_apply_live import Project
from tests.conftest import Cast, assert_problem
from tests.console.forms import signed_in, submit
from tests.database_servers import REDIS_PASSWORD, listening, own_redis
from tests.factories import post_in_project

settings_overrides = overriding(
    allow_private_targets=True, plans_file=plans("[plans.free]\ncheckFrequencyMinutes = 0\n")
)


@pytest.fixture
async def redis_port(tmp_path: Path) -> AsyncIterator[tuple[int, Any]]:
    async with own_redis(tmp_path) as server:
        yield server


async def _create(client: httpx.AsyncClient, cast: Cast, kind: str, url: str) -> httpx.Response:
    return await post_in_project(
        client,
        cast.alice,
        cast.project_id,
        "/monitors",
        name=kind,
        type=kind,
        url=url,
        intervalSeconds=3600,
    )


async def _check(client: httpx.AsyncClient, cast: Cast, monitor: dict[str, Any]) -> dict[str, Any]:
    answer = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def test_a_redis_monitor_is_up_then_down_once_its_server_stops(
    client: httpx.AsyncClient, cast: Cast, redis_port: tuple[int, Any]
) -> None:
    port, server = redis_port
    created = await _create(client, cast, "redis", f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0")
    assert created.status_code == 201, created.text
    monitor = created.json()

    assert (await _check(client, cast, monitor))["status"] == "up"
    server.terminate()
    await server.wait()
    down = await _check(client, cast, monitor)
    assert (down["status"], down["errorKind"]) == ("down", "connect")


async def test_a_redis_url_shows_its_password_masked_and_keeps_it_when_sent_back(
    client: httpx.AsyncClient, cast: Cast, redis_port: tuple[int, Any]
) -> None:
    port, _server = redis_port
    created = await _create(client, cast, "redis", f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0")
    monitor = created.json()
    masked = f"redis://:****@127.0.0.1:{port}/0"
    assert monitor["url"] == masked
    fetched = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert REDIS_PASSWORD not in fetched.text
    assert fetched.json()["url"] == masked

    kept = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.alice.headers, json={"url": masked}
    )
    assert kept.status_code == 200, kept.text
    assert (await _check(client, cast, monitor))["status"] == "up"

    elsewhere = await client.patch(
        f"/monitors/{monitor['id']}",
        headers=cast.alice.headers,
        json={"url": f"redis://:****@localhost:{port}/0"},
    )
    assert assert_problem(elsewhere, 422)


@pytest.mark.skipif(not listening(5432), reason="no PostgreSQL on 127.0.0.1:5432")
async def test_a_postgres_monitor_is_up_and_down_on_a_closed_port(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    created = await _create(client, cast, "postgres", "postgresql://postgres@127.0.0.1/postgres")
    assert created.status_code == 201, created.text
    assert (await _check(client, cast, created.json()))["status"] == "up"

    closed = await _create(client, cast, "postgres", "postgresql://postgres@127.0.0.1:1/postgres")
    assert (await _check(client, cast, closed.json()))["errorKind"] == "connect"


@pytest.mark.skipif(not listening(3306), reason="no MariaDB on 127.0.0.1:3306")
async def test_a_mysql_monitor_is_up(client: httpx.AsyncClient, cast: Cast) -> None:
    created = await _create(client, cast, "mysql", "mysql://root@127.0.0.1:3306")
    assert created.status_code == 201, created.text
    assert (await _check(client, cast, created.json()))["status"] == "up"


async def test_a_postgres_url_needing_a_hostname_check_is_refused_by_name(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    url = "postgresql://u:p@db.example.com/app?sslmode=verify-full"
    problem = assert_problem(await _create(client, cast, "postgres", url), 422)
    assert "sslmode" in str(problem)


async def test_a_url_of_another_scheme_is_refused_for_a_database_type(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    assert_problem(await _create(client, cast, "redis", "mysql://u:p@db.example.com/"), 422)


def test_upwatch_apply_makes_a_redis_monitor_from_a_url_in_the_environment(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    url = f"redis://:{REDIS_PASSWORD}@127.0.0.1:6379/0"
    document = {
        "version": 1,
        "monitors": [
            {
                "key": "cache",
                "name": "Cache",
                "type": "redis",
                "url": {"env": "CACHE_URL"},
                "intervalSeconds": 600,
            }
        ],
    }
    try:
        project.apply(document, CACHE_URL=url)
        assert project.state()["monitors"]["cache"]["url"] == "redis://:****@127.0.0.1:6379/0"
        assert "Nothing to do." in project.apply(document, CACHE_URL=url)
    finally:
        project.api.close()
        project.server.stop()


async def test_the_console_form_makes_a_mysql_monitor_whose_password_stays_masked(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    made = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=cast.project_id,
        type="mysql",
        name="Orders DB",
        url="mysql://monitor:db-s3cret@127.0.0.1:3306/orders?ssl=true",
        intervalSeconds="300",
    )
    assert made.status_code == 303, made.text
    monitor_id = made.headers["location"].rsplit("/", 1)[1]
    stored = (await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)).json()
    assert (stored["type"], stored["url"]) == (
        "mysql",
        "mysql://monitor:****@127.0.0.1:3306/orders?ssl=true",
    )
    page = await client.get(f"/app/monitors/{monitor_id}/edit")
    assert page.status_code == 200
    assert "mysql://monitor:****@127.0.0.1" in page.text
    assert "db-s3cret" not in page.text
