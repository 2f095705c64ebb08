"""Distributed mode with every role a real process over PostgreSQL and Redis, and kill -9.

The API (`serve --roles api`), two schedulers (a leader and a standby), an ingester and a
worker of region `eu`. PostgreSQL only (distributed roles need it): the SQLite pass skips.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from tests import live_server as live
from tests.conftest import BACKEND, PASSWORD, _empty_tables, eventually, forget_redis_keys
from tests.engine.test_region_worker import WITHIN
from tests.factories import FAST_PLANS, Target
from tests.tcp_proxy import proxy_to
from upwatch.config import async_database_url
from upwatch.models import CheckResult
from upwatch.models.keys import monitor_number

INTERVAL = 10  # the shortest a monitor may have

pytestmark = pytest.mark.skipif(
    BACKEND != "postgresql", reason="distributed roles need PostgreSQL; its pass runs these"
)


@dataclass
class Deployment:
    cwd: Path
    env: dict[str, str]
    prefix: str
    server: live.LiveServer
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    async def start(self, name: str, *command: str) -> asyncio.subprocess.Process:
        with (self.cwd / f"{name}.log").open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                live.UPWATCH, *command, cwd=self.cwd, env=self.env, stdout=log, stderr=log
            )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.cwd / f"{name}.log").read_text()

    async def kill(self, name: str) -> None:
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        await process.wait()


@contextlib.asynccontextmanager
async def deployed(redis_url: str, database_url: str, cwd: Path) -> AsyncIterator[Deployment]:
    """The API on ``database_url`` (which may be a proxy's), no role started yet."""
    prefix = f"test-{uuid.uuid4().hex}"
    plans = cwd / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = live.clean_env(
        UPWATCH_DATABASE_URL=database_url,
        UPWATCH_REDIS_URL=redis_url,
        UPWATCH_BROKER_PREFIX=prefix,
        UPWATCH_BROKER_RECLAIM_SECONDS="2",
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_REGION_REPORT_SECONDS="0.5",
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_INGEST_MAX_WAIT_SECONDS="0.25",
        UPWATCH_ROLE_RESTART_MAX_SECONDS="2",
        UPWATCH_ADMIN_PASSWORD=PASSWORD,
    )
    live.create_root(cwd, env)
    server = live.LiveServer(cwd, {**env, "UPWATCH_ROLES": "api"}).start()
    running = Deployment(cwd, env, prefix, server)
    try:
        yield running
    finally:
        for process in running.processes.values():
            if process.returncode is None:
                process.kill()
            await process.wait()
        server.stop()
        await forget_redis_keys(redis_url, prefix)


@pytest.fixture
async def emptied(database_url: str) -> AsyncIterator[str]:
    """The session's database, emptied after the test (no app fixture does it here)."""
    yield database_url
    await _empty_tables(database_url)


@pytest.fixture
async def deployment(redis_url: str, emptied: str, tmp_path: Path) -> AsyncIterator[Deployment]:
    async with deployed(redis_url, emptied, tmp_path) as running:
        yield running


async def monitored(run: Deployment, api: httpx.AsyncClient, url: str) -> tuple[str, str]:
    """Log in, define region eu and a monitor checked there; (monitor id, region id)."""
    run.headers = await live.log_in_as_root(api, PASSWORD)
    region_id = (await live.define_regions(api, run.headers, "eu"))["eu"]
    monitor_id = await live.watched_monitor(
        api, run.headers, url, intervalSeconds=INTERVAL, regionIds=[region_id]
    )
    return monitor_id, region_id


async def quiet(run: Deployment, redis_url: str, region_id: str) -> None:
    """Stop scheduling, then wait until every job is checked and every result stored."""
    run.processes["scheduler"].send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(run.processes["scheduler"].wait(), WITHIN) == 0
    redis = Redis.from_url(redis_url)
    try:

        async def drained() -> bool:
            streams = [f"{run.prefix}:results", f"{run.prefix}:jobs:{region_id}"]
            lengths: list[Any] = [await redis.xlen(s) for s in streams]
            return lengths == [0, 0]

        await eventually(drained, WITHIN)
    finally:
        await redis.aclose()


def stored_at_least(
    database_url: str, monitor_id: str, count: int
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await stored_results(database_url, monitor_id) >= count

    return check


async def stored_results(database_url: str, monitor_id: str) -> int:
    engine = create_async_engine(async_database_url(database_url))
    try:
        async with engine.connect() as connection:
            # By the monitor's number: the row holds no id (``CheckResult.monitor_id`` is a
            # subquery for loaded results, with no FROM of its own here).
            query = (
                select(func.count())
                .select_from(CheckResult)
                .where(CheckResult.monitor_number == monitor_number(monitor_id))
            )
            return int(await connection.scalar(query) or 0)
    finally:
        await engine.dispose()


async def test_every_role_as_a_process_survives_kill_9_of_its_scheduler_and_ingester(
    deployment: Deployment, target: Target, redis_url: str, database_url: str
) -> None:
    run = deployment
    await run.start("scheduler-a", "scheduler")
    await eventually(lambda: "this scheduler leads now" in run.log("scheduler-a"), WITHIN)
    await run.start("scheduler", "scheduler")
    await eventually(lambda: "standing by" in run.log("scheduler"), WITHIN)
    await run.start("ingester-1", "ingester")
    await run.start("worker-eu", "worker", "--region", "eu", "--concurrency", "10")
    # Idle connections dropped before the server's keep-alive (5 s) ends them: a request on
    # one it was closing met "Server disconnected" after a long wait below.
    limits = httpx.Limits(keepalive_expiry=2)
    async with httpx.AsyncClient(base_url=run.server.url, timeout=30, limits=limits) as api:
        monitor_id, region_id = await monitored(run, api, target.url)
        # API -> Redis changes -> scheduler -> worker -> ingester -> PostgreSQL.
        await eventually(stored_at_least(database_url, monitor_id, 1), WITHIN)
        status = (await api.get(f"/monitors/{monitor_id}", headers=run.headers)).json()
        assert status["status"] == "up"
        # "Check now" in the API process runs in the region's worker; the answer is its row.
        hits = target.hits
        checked = await api.post(f"/monitors/{monitor_id}/check", headers=run.headers)
        assert checked.status_code == 200, checked.text
        assert checked.json()["regionId"] == region_id
        assert checked.json()["status"] == "up"
        assert target.hits > hits
        assert target.user_agents[-1].endswith("(+region eu)")

    # The leader dies: the standby leads and checks go on.
    await run.kill("scheduler-a")
    await eventually(lambda: "this scheduler leads now" in run.log("scheduler"), WITHIN)
    before = target.hits
    await eventually(lambda: target.hits >= before + 2, WITHIN + 2 * INTERVAL)

    # The ingester dies: results wait in Redis; a new one takes them over, stores each once.
    await run.kill("ingester-1")
    hits = target.hits
    await eventually(lambda: target.hits > hits, WITHIN + INTERVAL)  # checked meanwhile
    await run.start("ingester-2", "ingester")

    await quiet(run, redis_url, region_id)
    # Every request the target saw is one stored result: none lost, none twice.
    assert await stored_results(database_url, monitor_id) == target.hits


async def test_every_role_recovers_by_itself_from_a_postgresql_outage_and_loses_no_result(
    redis_url: str, emptied: str, tmp_path: Path, target: Target
) -> None:
    database_url = emptied
    server = make_url(database_url)
    with proxy_to(server.host or "127.0.0.1", server.port or 5432) as proxy:
        async with deployed(redis_url, proxy.url_for(database_url), tmp_path) as run:
            await run.start("scheduler", "scheduler")
            await run.start("ingester", "ingester")
            await run.start("worker-eu", "worker", "--region", "eu", "--concurrency", "10")
            async with httpx.AsyncClient(base_url=run.server.url, timeout=30) as api:
                monitor_id, region_id = await monitored(run, api, target.url)
            await eventually(stored_at_least(database_url, monitor_id, 1), WITHIN)

            await asyncio.to_thread(proxy.refuse)  # every connection cut, new ones refused
            hits = target.hits
            # Checks already handed to the worker go on; their results wait in Redis.
            await eventually(lambda: target.hits > hits, WITHIN + INTERVAL)
            await asyncio.to_thread(proxy.restore)

            # Nobody restarts anything: the roles reconnect, lead, store and schedule again.
            stored = await stored_results(database_url, monitor_id)
            await eventually(stored_at_least(database_url, monitor_id, stored + 2), 60)
            await quiet(run, redis_url, region_id)
            assert await stored_results(database_url, monitor_id) == target.hits
