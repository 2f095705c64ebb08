"""Three regions end to end: `upwatch serve` with the Redis broker and three `upwatch worker`
processes, a target that fails for some regions only, quorum 2, per-region figures (seed 23)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import live_server as live
from tests.conftest import PASSWORD, eventually, forget_redis_keys
from tests.engine.test_region_worker import WITHIN
from tests.factories import FAST_PLANS, Target

REGIONS = ("eu", "us", "ap")
INTERVAL = 10  # the shortest a monitor may have
# A round of checks in every region, and its results stored, with room for a loaded machine.
ROUND = float(INTERVAL * 3)


@pytest.fixture
async def deployment(
    redis_url: str, tmp_path: Path
) -> AsyncIterator[tuple[live.LiveServer, dict[str, str]]]:
    """The service (scheduler, ingester, API) and one worker process per region."""
    prefix = f"test-{uuid.uuid4().hex}"
    plans = tmp_path / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = live.clean_env(
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_BROKER="redis",
        UPWATCH_REDIS_URL=redis_url,
        UPWATCH_BROKER_PREFIX=prefix,
        UPWATCH_REGION_REPORT_SECONDS="0.5",
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_ADMIN_PASSWORD=PASSWORD,
    )
    live.create_root(tmp_path, env)
    server = live.LiveServer(tmp_path, env).start()
    workers = []
    try:
        for code in REGIONS:
            with (tmp_path / f"worker-{code}.log").open("ab") as log:
                worker = await asyncio.create_subprocess_exec(
                    live.UPWATCH, "worker", "--region", code, "--concurrency", "10",
                    cwd=tmp_path, env=env, stdout=log, stderr=log,
                )  # fmt: skip
            workers.append(worker)
        yield server, env
    finally:
        for worker in workers:
            worker.kill()
            await worker.wait()
        server.stop()
        await forget_redis_keys(redis_url, prefix)


async def test_quorum_two_of_three_regions_holds_up_with_one_failing_and_goes_down_with_two(
    deployment: tuple[live.LiveServer, dict[str, str]], target: Target
) -> None:
    server, _env = deployment
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as api:
        headers = await live.log_in_as_root(api, PASSWORD)
        region_ids = await live.define_regions(api, headers, *REGIONS)

        async def all_online() -> bool:
            listed = (await api.get("/regions", headers=headers)).json()
            return {r["code"] for r in listed if r["online"]} >= set(REGIONS)

        await eventually(all_online, WITHIN)  # each worker beat, the service saw it
        listed = (await api.get("/regions", headers=headers)).json()
        workers = {r["code"]: r["workers"] for r in listed}
        assert workers == {"local": 0, "eu": 1, "us": 1, "ap": 1}  # `local` has none here
        monitor_id = await live.watched_monitor(
            api,
            headers,
            target.url,
            intervalSeconds=INTERVAL,
            regionIds=list(region_ids.values()),
            quorum=2,
            retries=0,
        )
        path = f"/monitors/{monitor_id}"

        async def regions() -> dict[str, dict[str, Any]]:
            answer = await api.get(f"{path}/regions", headers=headers)
            assert answer.status_code == 200, answer.text
            return {r["code"]: r for r in answer.json()["regions"]}

        async def states(expected: dict[str, str]) -> bool:
            found = await regions()
            return all(found[code]["status"] == status for code, status in expected.items())

        async def status() -> str:
            return str((await api.get(path, headers=headers)).json()["status"])

        await eventually(lambda: states(dict.fromkeys(REGIONS, "up")), ROUND)
        assert await status() == "up"

        target.failing_agents = {"(+region eu)"}
        await eventually(lambda: states({"eu": "down", "us": "up", "ap": "up"}), ROUND)
        assert await status() == "up"  # one region of three fails: below the quorum of 2

        target.failing_agents = {"(+region eu)", "(+region us)"}
        await eventually(lambda: states({"eu": "down", "us": "down", "ap": "up"}), ROUND)
        assert await status() == "down"

        # Seed 23: each region's own figures.
        figures = await regions()
        assert all(figures[code]["totalChecks"] >= 2 for code in REGIONS)
        assert figures["ap"]["uptimePercentage"] == 100
        assert figures["eu"]["uptimePercentage"] < 100
        assert all(figures[code]["avgResponseTimeMs"] is not None for code in REGIONS)
        agents = set(target.user_agents)
        assert {f"(+region {code})" for code in REGIONS} <= {a[a.index("(") :] for a in agents}
