"""Shared factories: real local targets, and what tests make and change through the API."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from aiohttp import web

from upwatch.engine.broker import CheckReport
from upwatch.probes.outcome import ErrorKind, Outcome

if TYPE_CHECKING:  # conftest imports this module for its Target fixture
    from collections.abc import Mapping
    from datetime import datetime

    from tests.conftest import Account
    from upwatch.engine.embedded import Engine


class Target:
    """A real HTTP server on loopback whose answer the test controls."""

    def __init__(self) -> None:
        self.status = 200
        self.body = "all systems go"
        self.hits = 0
        self.user_agents: list[str] = []  # each request's, in order
        self.headers: dict[str, str] = {}  # the last request's
        # Requests whose User-Agent holds one of these get a 503 (a region's path is broken).
        self.failing_agents: set[str] = set()
        self.url = ""
        self.delay = 0.0  # seconds before each answer
        self.gate = asyncio.Event()  # cleared, requests wait until it is set again
        self.gate.set()
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        self.headers = dict(request.headers)
        agent = request.headers.get("User-Agent", "")
        self.user_agents.append(agent)
        if any(part in agent for part in self.failing_agents):
            return web.Response(status=503, text="not from here")
        await self.gate.wait()
        if self.delay:
            await asyncio.sleep(self.delay)
        return web.Response(status=self.status, text=self.body)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/health"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


# Every test account's password, unless a test says otherwise.
PASSWORD = "correct horse battery"

# Plans file text for tests that check often: ten-second intervals and room for three monitors.
FAST_PLANS = "[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = 3\n"


async def ingest(
    engine: Engine,
    monitor_id: str,
    at: datetime,
    ok: bool,
    response_ms: float = 12.0,
    details: Mapping[str, object] | None = None,
) -> None:
    """Store one check of the monitor at ``at``, as if its worker had run it: with a manual
    clock no scheduled check comes due, so these are all the monitor's results."""
    outcome = (
        Outcome(ok=True, response_time_ms=response_ms, status_code=200, details=details or {})
        if ok
        else Outcome(ok=False, response_time_ms=None, error_kind=ErrorKind.TIMEOUT, error="late")
    )
    stamp = at.timestamp()
    report = CheckReport(monitor_id, engine.local_region_id, stamp, stamp, at, outcome)
    assert await engine.ingester.ingest([report])


async def post_in_project(
    client: httpx.AsyncClient, account: Account, project_id: str, path: str, /, **fields: Any
) -> httpx.Response:
    """``fields`` sent by ``account`` to make something at ``path`` in the project, whatever
    the answer: for requests a test expects refused (the factories below expect a 201)."""
    return await client.post(
        path, headers=account.headers, json={"projectId": project_id, **fields}
    )


def bearer(answer: httpx.Response, status: int = 200) -> dict[str, str]:
    """The Authorization header of the access token a sign-up or login answered with, once the
    answer's status is checked."""
    assert answer.status_code == status, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


async def log_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    """``POST /auth/login`` with this address and password, whatever the answer."""
    return await client.post("/auth/login", json={"email": email, "password": password})


async def reset_password(
    client: httpx.AsyncClient, token: str, new_password: str
) -> httpx.Response:
    """``POST /auth/reset-password`` with the token of a mailed link, whatever the answer."""
    return await client.post(
        "/auth/reset-password", json={"token": token, "newPassword": new_password}
    )


async def change_profile(
    client: httpx.AsyncClient, account: Account, **fields: Any
) -> httpx.Response:
    """``account`` changes its own profile (``PUT /users/me``), whatever the answer."""
    return await client.put("/users/me", headers=account.headers, json=fields)


async def change_settings(
    client: httpx.AsyncClient, account: Account, **fields: Any
) -> httpx.Response:
    """``account`` changes its own settings (``PUT /users/settings``), whatever the answer."""
    return await client.put("/users/settings", headers=account.headers, json=fields)


async def create_monitor(
    client: httpx.AsyncClient, account: Account, project_id: str, **fields: Any
) -> dict[str, Any]:
    """An HTTP monitor named Shop checked every minute, unless ``fields`` say otherwise."""
    body = {"name": "Shop", "type": "http", "intervalSeconds": 60, **fields}
    response = await post_in_project(client, account, project_id, "/monitors", **body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


async def _created(
    client: httpx.AsyncClient, headers: dict[str, str], path: str, body: dict[str, Any]
) -> dict[str, Any]:
    response = await client.post(path, headers=headers, json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


async def create_incident(
    client: httpx.AsyncClient, account: Account, project_id: str, **fields: Any
) -> dict[str, Any]:
    """A manual incident titled "Checkout is slow", unless ``fields`` say otherwise."""
    body = {"title": "Checkout is slow", "projectId": project_id, **fields}
    return await _created(client, account.headers, "/incidents", body)


async def create_provider(
    client: httpx.AsyncClient, headers: dict[str, str], project_id: str, **fields: Any
) -> dict[str, Any]:
    """A notification provider of ``fields`` (type, name, config, ...) in the project."""
    body = {"projectId": project_id, **fields}
    return await _created(client, headers, "/notification-providers", body)


async def create_page(
    client: httpx.AsyncClient, account: Account, project_id: str, **fields: Any
) -> dict[str, Any]:
    """A page named "Shop status" at slug ``shop-status``, unless ``fields`` say otherwise."""
    body = {"projectId": project_id, "name": "Shop status", "slug": "shop-status", **fields}
    return await _created(client, account.headers, "/status-pages", body)


async def add_component(
    client: httpx.AsyncClient, account: Account, page_id: str, monitor_id: str, **fields: Any
) -> dict[str, Any]:
    """The monitor shown on the page."""
    body = {"monitorId": monitor_id, **fields}
    return await _created(client, account.headers, f"/status-pages/{page_id}/components", body)


async def sent_back(
    client: httpx.AsyncClient, update_schema: str, read: dict[str, Any]
) -> dict[str, Any]:
    """What a client sends back of a resource it read: the fields its update body takes (the
    properties of ``update_schema`` in the OpenAPI document); read-only ones are refused."""
    document = (await client.get("/openapi.json")).json()
    writable = document["components"]["schemas"][update_schema]["properties"]
    return {name: value for name, value in read.items() if name in writable}


@dataclass(frozen=True)
class InProject:
    """An account making things in a project, through the factories above."""

    client: httpx.AsyncClient
    account: Account
    project_id: str

    async def post(self, path: str, /, **fields: Any) -> httpx.Response:
        return await post_in_project(self.client, self.account, self.project_id, path, **fields)

    async def monitor(self, **fields: Any) -> dict[str, Any]:
        return await create_monitor(self.client, self.account, self.project_id, **fields)

    async def provider(self, **fields: Any) -> dict[str, Any]:
        return await create_provider(self.client, self.account.headers, self.project_id, **fields)

    async def page(self, **fields: Any) -> dict[str, Any]:
        return await create_page(self.client, self.account, self.project_id, **fields)

    async def invite(self, email: str) -> httpx.Response:
        """Invite ``email`` to the project, whatever the answer."""
        return await self.client.post(
            f"/projects/{self.project_id}/users",
            headers=self.account.headers,
            json={"email": email},
        )

    async def incident(self, **fields: Any) -> dict[str, Any]:
        return await create_incident(self.client, self.account, self.project_id, **fields)
