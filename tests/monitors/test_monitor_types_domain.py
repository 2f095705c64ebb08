"""Domain monitors through the API, the console and ``upwatch apply``, with the engine asking a
real RDAP server on loopback (UPWATCH_RDAP_BASE_URL points every lookup at it)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.app_settings import fixture_value, overriding
from tests.client.test_apply_live import Project
from tests.conftest import Cast, assert_problem, eventually
from tests.console.forms import signed_in, submit
from tests.factories import FAST_PLANS, create_monitor, post_in_project
from upwatch.kit.clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the engine schedules on real time


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    path = tmp_path / "plans.toml"
    path.write_text(FAST_PLANS)
    return path


settings_overrides = overriding(allow_private_targets=True, plans_file=fixture_value("plans_file"))


class Registry:
    """An RDAP server answering for example.com: its expiry, or an HTTP error."""

    def __init__(self) -> None:
        self.expires = datetime.now(UTC) + timedelta(days=400)
        self.error: int | None = None

    async def handle(self, request: web.Request) -> web.Response:
        if self.error is not None:
            return web.Response(status=self.error)
        if request.match_info["name"] != "example.com":
            return web.json_response({"errorCode": 404}, status=404)
        answer = {
            "objectClassName": "domain",
            "ldhName": "EXAMPLE.COM",
            "events": [
                {
                    "eventAction": "expiration",
                    "eventDate": self.expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ],
        }
        return web.json_response(answer, content_type="application/rdap+json")


@pytest.fixture
async def registry(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Registry]:
    found = Registry()
    app = web.Application()
    app.router.add_get("/rdap/domain/{name}", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    monkeypatch.setenv("UPWATCH_RDAP_BASE_URL", f"http://127.0.0.1:{port}/rdap/")
    yield found
    await runner.cleanup()


async def test_a_domain_monitor_is_up_then_down_when_its_registration_nears_expiry(
    client: httpx.AsyncClient, cast: Cast, registry: Registry
) -> None:
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        type="domain",
        name="Shop domain",
        host="example.com",
        intervalSeconds=3600,
        retries=0,
    )
    assert monitor["warningDays"] == [30, 14, 7]
    url = f"/monitors/{monitor['id']}"

    async def first_check_stored() -> bool:
        listed = await client.get(f"{url}/checks", headers=cast.alice.headers)
        return listed.headers["X-Total-Count"] == "1"

    # The scheduler checks a new monitor within seconds; the next one is an hour away.
    await eventually(first_check_stored)
    up = (await client.post(f"{url}/check", headers=cast.alice.headers)).json()
    assert up["status"] == "up"
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "up"

    # A registry in trouble says nothing about the domain: the monitor stays up.
    registry.error = 503
    unsure = (await client.post(f"{url}/check", headers=cast.alice.headers)).json()
    assert unsure["errorKind"] == "domain_lookup"
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "up"

    registry.error = None
    registry.expires = datetime.now(UTC) + timedelta(days=5, hours=1)
    expiring = (await client.post(f"{url}/check", headers=cast.alice.headers)).json()
    assert expiring["errorKind"] == "domain_expiry"
    assert "example.com expires in 5 days" in expiring["error"]
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "down"


async def test_a_host_that_is_not_a_registered_domain_is_refused_naming_the_field(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    made = await post_in_project(
        client,
        cast.alice,
        cast.project_id,
        "/monitors",
        name="Bad",
        type="domain",
        host="localhost",
        intervalSeconds=3600,
    )
    problem = assert_problem(made, 422)
    assert "host" in str(problem)


async def test_a_domain_monitor_is_made_in_the_console_with_its_warning_days(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    form = (await client.get("/app/monitors/new?type=domain")).text
    assert 'name="warningDays"' in form

    made = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=cast.project_id,
        type="domain",
        name="Shop domain",
        intervalSeconds="3600",
        host="example.org",
        warningDays="60, 30",
    )

    assert made.status_code == 303, made.text
    found = re.search(r"/app/monitors/([0-9a-f]{32})$", made.headers["location"])
    assert found
    stored = (await client.get(f"/monitors/{found.group(1)}", headers=cast.alice.headers)).json()
    assert (stored["type"], stored["host"], stored["warningDays"]) == (
        "domain",
        "example.org",
        [60, 30],
    )


def test_upwatch_apply_creates_a_domain_monitor_and_a_second_apply_changes_nothing(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    try:
        document: dict[str, Any] = {
            "version": 1,
            "monitors": [
                {
                    "key": "domain",
                    "name": "Shop domain",
                    "type": "domain",
                    "host": "example.com",
                    "warningDays": [45, 10],
                    "intervalSeconds": 3600,
                }
            ],
        }
        first = project.apply(document)
        again = project.apply(document)
        listed = project.api.get(
            "/monitors", headers=project.headers, params={"projectId": project.project_id}
        ).json()
    finally:
        project.api.close()
        project.server.stop()

    assert "Plan: 1 to create" in first
    assert "0 to create, 0 to update, 0 to replace, 0 to delete, 1 unchanged" in again
    (monitor,) = listed
    assert (monitor["type"], monitor["host"], monitor["warningDays"]) == (
        "domain",
        "example.com",
        [45, 10],
    )
