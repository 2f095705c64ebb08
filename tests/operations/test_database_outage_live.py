"""The real `upwatch serve` on PostgreSQL survives the database going away.

The database is reached through a proxy of the test's own (never the machine's shared server):
"restart" cuts every connection and refuses new ones until the service has noticed, and the
long outage refuses connections for 20 seconds. Meanwhile monitors are checked and edited.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import BACKEND, PASSWORD, WAIT_SECONDS, _empty_tables, eventually
from tests.factories import FAST_PLANS, Target, bearer
from tests.live_server import LiveServer, clean_env
from tests.tcp_proxy import TcpProxy, proxy_to

pytestmark = [
    pytest.mark.skipif(
        BACKEND != "postgresql", reason="a database server's outage: SQLite has no server to lose"
    ),
    pytest.mark.usefixtures("collect_cut_connections"),  # it cuts connections on purpose
]

INTERVAL = 10
# How long the long outage lasts (the scenario: PostgreSQL refuses for 20 s).
OUTAGE_SECONDS = float(os.environ.get("UPWATCH_TEST_OUTAGE_SECONDS", "20"))


@pytest.fixture
def proxy(database_url: str) -> Iterator[TcpProxy]:
    upstream = urlsplit(database_url)
    with proxy_to(upstream.hostname or "127.0.0.1", upstream.port or 5432) as running:
        yield running
    asyncio.run(_empty_tables(database_url))


class Editor:
    """Someone editing monitors and reading lists all along; remembers every status."""

    def __init__(self, api: httpx.AsyncClient, headers: dict[str, str], ids: list[str]) -> None:
        self.api = api
        self.headers = headers
        self.ids = ids
        self.statuses: Counter[int] = Counter()
        self.unavailable_without_retry_after = 0

    async def run(self) -> None:
        turn = 0
        while True:
            turn += 1
            monitor_id = self.ids[turn % len(self.ids)]
            for response in (
                await self.api.patch(
                    f"/monitors/{monitor_id}", headers=self.headers, json={"name": f"Shop {turn}"}
                ),
                await self.api.get("/monitors", headers=self.headers),
            ):
                self.statuses[response.status_code] += 1
                if response.status_code == 503 and "retry-after" not in response.headers:
                    self.unavailable_without_retry_after += 1
            await asyncio.sleep(0.2)  # a person's pace, not a synchronisation


async def latest_check(api: httpx.AsyncClient, headers: dict[str, str], monitor_id: str) -> Any:
    checks = await api.get(f"/monitors/{monitor_id}/checks?limit=1", headers=headers)
    assert checks.status_code == 200, checks.text
    body = checks.json()
    return datetime.fromisoformat(body[0]["checkedAt"]) if body else None


async def test_checks_resume_and_the_api_answers_503_while_postgresql_restarts_or_refuses(
    tmp_path: Path, database_url: str, proxy: TcpProxy, target: Target
) -> None:
    plans = tmp_path / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = clean_env(
        UPWATCH_DATABASE_URL=proxy.url_for(database_url),
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_ROLE_RESTART_MAX_SECONDS="2",
        UPWATCH_READY_STALL_SECONDS="5",
        UPWATCH_METRICS_PUBLIC="true",  # read below without a token
    )
    server = LiveServer(tmp_path, env).start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as api:
            signup = await api.post(
                "/auth/signup", json={"email": "alice@example.com", "password": PASSWORD}
            )
            headers = bearer(signup, 201)
            project = await api.post("/projects", headers=headers, json={"name": "Shop"})
            assert project.status_code == 201, project.text
            ids = []
            for n in range(3):
                created = await api.post(
                    "/monitors",
                    headers=headers,
                    json={
                        "projectId": project.json()["id"],
                        "name": f"Shop {n}",
                        "type": "http",
                        "url": target.url,
                        "intervalSeconds": INTERVAL,
                    },
                )
                assert created.status_code == 201, created.text
                ids.append(created.json()["id"])

            async def all_checked_since(moment: datetime) -> bool:
                for monitor_id in ids:
                    latest = await latest_check(api, headers, monitor_id)
                    if latest is None or latest <= moment:
                        return False
                return True

            await eventually(lambda: all_checked_since(datetime.fromtimestamp(0, UTC)), 30)
            editor = Editor(api, headers, ids)
            editing = asyncio.create_task(editor.run())

            async def readiness() -> int:
                return (await api.get("/readyz")).status_code

            async def unready() -> bool:
                return await readiness() == 503

            # 1. A restart: every connection cut, new ones refused until the service noticed.
            await asyncio.to_thread(proxy.cut)
            await asyncio.to_thread(proxy.refuse)
            await eventually(unready, within=30)
            await asyncio.to_thread(proxy.restore)
            back = datetime.now(UTC)
            await eventually(lambda: all_checked_since(back), within=INTERVAL + WAIT_SECONDS)

            # 2. PostgreSQL refuses connections for 20 seconds.
            await asyncio.to_thread(proxy.refuse)
            await eventually(unready, within=30)
            refused_until = time.monotonic() + OUTAGE_SECONDS
            while time.monotonic() < refused_until:
                assert await readiness() == 503
                await asyncio.sleep(1)
            await asyncio.to_thread(proxy.restore)
            back = datetime.now(UTC)
            await eventually(lambda: all_checked_since(back), within=INTERVAL + WAIT_SECONDS)

            async def ready() -> bool:
                return await readiness() == 200

            await eventually(ready, within=30)
            # Awaited, not only cancelled: a request cut off mid-way closes its connection
            # here, while the client is open, instead of leaving it to the garbage collector.
            editing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await editing
            metrics = (await api.get("/metrics")).text
    finally:
        server.stop()

    # Every call answered: successes, and 503 with Retry-After while the database was away.
    assert set(editor.statuses) <= {200, 503}, editor.statuses
    assert editor.statuses[503] > 0, editor.statuses
    assert editor.statuses[200] > 0, editor.statuses
    assert editor.unavailable_without_retry_after == 0
    restarts = [
        float(value)
        for value in re.findall(r"^upwatch_role_restarts_total\{[^}]*\} (\S+)$", metrics, re.M)
    ]
    assert sum(restarts) > 0, metrics
    log = server.log.read_text()
    assert "Exception in ASGI application" not in log
    # The log tells each outage and its end, a line each, not a stack per request (a restart
    # may flap once while connections come back).
    outages = log.count("database unreachable")
    assert 2 <= outages <= 4, log
    assert log.count("database reachable again") == outages, log
