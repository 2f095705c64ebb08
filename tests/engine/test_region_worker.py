"""`upwatch worker --region CODE` as a real process: Redis only, its region's jobs, kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Protocol

import pytest
from redis.asyncio import Redis
from redis.exceptions import NoPermissionError

from tests.conftest import eventually, forget_redis_keys
from tests.engine.test_redis_broker import results
from tests.engine.test_worker_process import job
from tests.factories import Target
from tests.live_server import UPWATCH, clean_env
from upwatch import __version__
from upwatch.engine.broker import CheckJob
from upwatch.engine.redisbroker import RedisBroker
from upwatch.engine.regionworker import online_workers, publish_regions

# Settings, not speeds: how long a process may take to start and answer on a loaded machine.
WITHIN = float(os.environ.get("UPWATCH_TEST_PROCESS_SECONDS", "30"))
REGION_ID = "region-eu"


class StartWorker(Protocol):
    def __call__(
        self, region: str = "eu", redis_url: str | None = None
    ) -> Awaitable[asyncio.subprocess.Process]: ...


@pytest.fixture
async def prefix(redis_url: str) -> AsyncIterator[str]:
    """A key prefix of the test's own, with the region `eu` known; its keys go at the end."""
    prefix = f"test-{uuid.uuid4().hex}"
    client = Redis.from_url(redis_url)
    await publish_regions(client, prefix, {"eu": REGION_ID})
    await client.aclose()
    yield prefix
    await forget_redis_keys(redis_url, prefix)


@pytest.fixture
async def start_worker(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[StartWorker]:
    started: list[asyncio.subprocess.Process] = []
    env = clean_env(
        UPWATCH_REDIS_URL=redis_url,
        UPWATCH_BROKER_PREFIX=prefix,
        UPWATCH_BROKER_RECLAIM_SECONDS="1",
        UPWATCH_REGION_REPORT_SECONDS="0.2",
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",  # the target is on loopback
    )

    async def start(region: str = "eu", redis_url: str | None = None) -> asyncio.subprocess.Process:
        own = {**env, "UPWATCH_REDIS_URL": redis_url} if redis_url else env
        with (tmp_path / f"worker-{len(started)}.log").open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                UPWATCH, "worker", "--region", region, "--concurrency", "10",
                cwd=tmp_path, env=own, stdout=log, stderr=log,
            )  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.wait()


def for_region(checked: CheckJob) -> CheckJob:
    return CheckJob(spec=checked.spec, region_id=REGION_ID, due_at=checked.due_at)


async def workers_online(redis: Redis, prefix: str) -> dict[str, int]:
    return await online_workers(redis, prefix, time.time(), online_seconds=5.0)


async def test_a_worker_process_runs_its_regions_checks_and_names_its_region(
    start_worker: StartWorker, redis: Redis, prefix: str, target: Target
) -> None:
    worker = await start_worker()
    scheduler = RedisBroker(redis, "scheduler", prefix=prefix)
    ingester = RedisBroker(redis, "ingester", prefix=prefix)
    sent = for_region(job(target.url))
    assert await scheduler.publish_jobs([sent]) == 1
    [report] = await asyncio.wait_for(results(ingester, 1), WITHIN)
    assert report.monitor_id == sent.spec.id
    assert report.region_id == REGION_ID
    assert report.outcome.ok
    assert target.user_agents == [f"Upwatch/{__version__} (+region eu)"]

    async def online() -> bool:
        return await workers_online(redis, prefix) == {REGION_ID: 1}

    await eventually(online, WITHIN)
    worker.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(worker.wait(), WITHIN) == 0
    # A worker that stopped cleanly leaves its region at once, not after the online window.
    assert await workers_online(redis, prefix) == {}


async def test_a_check_whose_worker_was_killed_mid_request_is_run_by_another_once(
    start_worker: StartWorker, redis: Redis, prefix: str, target: Target
) -> None:
    target.gate.clear()  # requests hang: the first worker is killed inside its check
    first = await start_worker()
    scheduler = RedisBroker(redis, "scheduler", prefix=prefix)
    ingester = RedisBroker(redis, "ingester", prefix=prefix)
    sent = for_region(job(target.url))
    await scheduler.publish_jobs([sent])
    await eventually(lambda: target.hits == 1, WITHIN)
    first.kill()
    await first.wait()
    target.gate.set()
    await start_worker()  # takes the job over once the reclaim timeout (1 s) has passed
    [report] = await asyncio.wait_for(results(ingester, 1), WITHIN)
    assert report.monitor_id == sent.spec.id
    assert report.outcome.ok
    assert target.hits == 2
    assert await redis.xlen(scheduler.jobs_stream(REGION_ID)) == 0  # acknowledged, deleted
    assert await redis.xlen(ingester.results_stream) == 1  # one result: the dead sent none


async def test_a_worker_with_its_regions_redis_user_checks_and_can_touch_nothing_else(
    start_worker: StartWorker,
    redis: Redis,
    redis_url: str,
    prefix: str,
    target: Target,
    tmp_path: Path,
) -> None:
    code = f"r{uuid.uuid4().hex[:8]}"  # a user name of this test's own: Redis users are global
    await publish_regions(redis, prefix, {code: "region-own"})
    made = await asyncio.create_subprocess_exec(
        UPWATCH, "admin", "worker-user", "--region", code,
        cwd=tmp_path, env=clean_env(UPWATCH_REDIS_URL=redis_url, UPWATCH_BROKER_PREFIX=prefix),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(made.communicate(), WITHIN)
    assert made.returncode == 0, err.decode()
    worker_url = out.decode().strip()
    try:
        worker = await start_worker(region=code, redis_url=worker_url)
        scheduler = RedisBroker(redis, "scheduler", prefix=prefix)
        ingester = RedisBroker(redis, "ingester", prefix=prefix)
        sent = CheckJob(spec=job(target.url).spec, region_id="region-own", due_at=time.time())
        assert await scheduler.publish_jobs([sent]) == 1
        [report] = await asyncio.wait_for(results(ingester, 1), WITHIN)
        assert report.region_id == "region-own"
        assert report.outcome.ok
        assert target.user_agents == [f"Upwatch/{__version__} (+region {code})"]

        async def online() -> bool:
            return await workers_online(redis, prefix) == {"region-own": 1}

        await eventually(online, WITHIN)
        # The same user reaches nothing of another region, no result, no administration.
        as_worker = Redis.from_url(worker_url)
        refused = {
            "another region's jobs": as_worker.xreadgroup(
                "workers", "intruder", {scheduler.jobs_stream(REGION_ID): ">"}
            ),
            "the results": as_worker.xrange(ingester.results_stream),
            "deleting its stream": as_worker.delete(scheduler.jobs_stream("region-own")),
            "trimming its stream": as_worker.xtrim(scheduler.jobs_stream("region-own"), 0),
            "renaming regions": as_worker.hset(f"{prefix}:regions", code, REGION_ID),
            "listing keys": as_worker.keys("*"),
            "emptying the database": as_worker.flushdb(),
            "reading the configuration": as_worker.config_get("requirepass"),
        }
        allowed = []
        try:
            for what, command in refused.items():
                try:
                    await command
                except NoPermissionError:
                    continue
                allowed.append(what)
        finally:
            await as_worker.aclose()
        assert allowed == []
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(worker.wait(), WITHIN) == 0
        assert await workers_online(redis, prefix) == {}  # it could take itself out, too
    finally:
        await redis.execute_command("ACL", "DELUSER", f"upwatch-worker-{code}")


async def test_a_worker_user_for_a_region_redis_does_not_know_is_refused_with_the_reason(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    made = await asyncio.create_subprocess_exec(
        UPWATCH, "admin", "worker-user", "--region", "nowhere",
        cwd=tmp_path, env=clean_env(UPWATCH_REDIS_URL=redis_url, UPWATCH_BROKER_PREFIX=prefix),
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(made.communicate(), WITHIN)
    assert made.returncode == 2
    assert b"region nowhere is not known" in err


async def test_a_worker_without_a_broker_address_says_what_it_needs(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        UPWATCH, "worker", "--region", "eu",
        cwd=tmp_path, env=clean_env(), stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(process.communicate(), WITHIN)
    assert process.returncode == 2
    assert b"UPWATCH_REDIS_URL" in stderr


def test_a_service_without_redis_configured_never_loads_the_redis_client(tmp_path: Path) -> None:
    """About 6 MB of resident memory in every process otherwise (bench/checks.py RSS)."""
    probe = (
        "import sys; from upwatch.app import create_app; create_app(); "
        "import upwatch.cli, upwatch.engine.embedded; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'redis'))"
    )
    found = subprocess.run(  # noqa: S603
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=WITHIN,
        check=True,
    )
    assert found.stdout.strip() == "[]"
