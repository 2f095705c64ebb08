"""Distributed mode with every role a real process over PostgreSQL and Redis, and kill -9.

The API (`serve --roles api`), two schedulers (a leader and a standby), an ingester and a
worker of region `eu`. PostgreSQL only (the lease is a PostgreSQL lock): the SQLite pass skips.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from tests.conftest import BACKEND, PASSWORD, eventually
from tests.engine.test_region_worker import WITHIN
from tests.factories import FAST_PLANS, Target
from tests.live_server import UPWATCH, LiveServer, clean_env, run_cli
from upwatch.config import async_database_url
from upwatch.models import CheckResult

INTERVAL = 10  # the shortest a monitor may have

pytestmark = pytest.mark.skipif(
    BACKEND != "postgresql", reason="distributed roles need PostgreSQL; its pass runs these"
)


@dataclass
class Deployment:
    cwd: Path
    env: dict[str, str]
    prefix: str
    server: LiveServer
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)

    async def start(self, name: str, *command: str) -> asyncio.subprocess.Process:
        with (self.cwd / f"{name}.log").open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                UPWATCH, *command, cwd=self.cwd, env=self.env, stdout=log, stderr=log
            )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.cwd / f"{name}.log").read_text()

    async def kill(self, name: str) -> None:
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        await process.wait()


@pytest.fixture
async def deployment(
    redis_url: str, database_url: str, tmp_path: Path
) -> AsyncIterator[Deployment]:
    prefix = f"test-{uuid.uuid4().hex}"
    plans = tmp_path / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = clean_env(
        UPWATCH_DATABASE_URL=database_url,
        UPWATCH_REDIS_URL=redis_url,
        UPWATCH_BROKER_PREFIX=prefix,
        UPWATCH_BROKER_RECLAIM_SECONDS="2",
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_REGION_REPORT_SECONDS="0.5",
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_INGEST_MAX_WAIT_SECONDS="0.25",
        UPWATCH_ADMIN_PASSWORD=PASSWORD,
    )
    created = run_cli(tmp_path, env, "admin", "create", "--email", "root@example.com")
    assert created.returncode == 0, created.stderr
    server = LiveServer(tmp_path, {**env, "UPWATCH_ROLES": "api"}).start()
    running = Deployment(tmp_path, env, prefix, server)
    try:
        yield running
    finally:
        for process in running.processes.values():
            if process.returncode is None:
                process.kill()
            await process.wait()
        server.stop()
        redis = Redis.from_url(redis_url)
        keys = [key async for key in redis.scan_iter(match=f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


async def stored_results(database_url: str, monitor_id: str) -> int:
    engine = create_async_engine(async_database_url(database_url))
    try:
        async with engine.connect() as connection:
            query = select(func.count()).where(CheckResult.monitor_id == monitor_id)
            return int(await connection.scalar(query) or 0)
    finally:
        await engine.dispose()


async def test_every_role_as_a_process_survives_kill_9_of_its_scheduler_and_ingester(
    deployment: Deployment, target: Target, redis_url: str, database_url: str
) -> None:
    run = deployment
    await run.start("scheduler-a", "scheduler")
    await eventually(lambda: "this scheduler leads now" in run.log("scheduler-a"), WITHIN)
    await run.start("scheduler-b", "scheduler")
    await eventually(lambda: "standing by" in run.log("scheduler-b"), WITHIN)
    await run.start("ingester-1", "ingester")
    await run.start("worker-eu", "worker", "--region", "eu", "--concurrency", "10")
    async with httpx.AsyncClient(base_url=run.server.url, timeout=30) as api:
        login = await api.post(
            "/auth/login", json={"email": "root@example.com", "password": PASSWORD}
        )
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        region = await api.post("/regions", headers=headers, json={"code": "eu", "name": "EU"})
        assert region.status_code == 201, region.text
        project = await api.post("/projects", headers=headers, json={"name": "Shop"})
        monitor = await api.post(
            "/monitors",
            headers=headers,
            json={
                "projectId": project.json()["id"],
                "name": "Shop",
                "type": "http",
                "url": target.url,
                "intervalSeconds": INTERVAL,
                "regionIds": [region.json()["id"]],
            },
        )
        assert monitor.status_code == 201, monitor.text
        monitor_id = monitor.json()["id"]

        def stored_at_least(count: int) -> Callable[[], Awaitable[bool]]:
            async def check() -> bool:
                return await stored_results(database_url, monitor_id) >= count

            return check

        # API -> Redis changes -> scheduler -> worker -> ingester -> PostgreSQL.
        await eventually(stored_at_least(1), WITHIN)
        status = (await api.get(f"/monitors/{monitor_id}", headers=headers)).json()["status"]
        assert status == "up"

        # The leader dies: the standby leads and checks go on.
        await run.kill("scheduler-a")
        await eventually(lambda: "this scheduler leads now" in run.log("scheduler-b"), WITHIN)
        before = target.hits
        await eventually(lambda: target.hits >= before + 2, WITHIN + 2 * INTERVAL)

        # The ingester dies: results wait in Redis; a new one takes them over and stores each
        # once.
        await run.kill("ingester-1")
        hits = target.hits
        await eventually(lambda: target.hits > hits, WITHIN + INTERVAL)  # checked meanwhile
        await run.start("ingester-2", "ingester")

        # Quiet the deployment: no new jobs, then everything in flight stored.
        run.processes["scheduler-b"].send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(run.processes["scheduler-b"].wait(), WITHIN) == 0
        redis = Redis.from_url(redis_url)
        try:

            async def drained() -> bool:
                streams = [f"{run.prefix}:results", f"{run.prefix}:jobs:{region.json()['id']}"]
                lengths: list[Any] = [await redis.xlen(s) for s in streams]
                return lengths == [0, 0]

            await eventually(drained, WITHIN)
        finally:
            await redis.aclose()
        # Every request the target saw is one stored result: none lost, none twice.
        assert await stored_results(database_url, monitor_id) == target.hits
