"""The embedded engine's roles under supervision, in the real app against a real target."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.app_settings import overriding, plans
from tests.conftest import Cast, InProject, eventually
from tests.factories import FAST_PLANS, Target
from upwatch.engine.broker import CheckJob
from upwatch.engine.embedded import Engine
from upwatch.kit.clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the engine schedules on real time


settings_overrides = overriding(
    allow_private_targets=True,
    plans_file=plans(FAST_PLANS),
    role_restart_seconds=0.05,
    # A role with work is stalled after three of its periods (the scheduler's is 1 s).
    ready_stall_seconds=1.0,
)


def restarts(app: FastAPI, role: str) -> float:
    registry = app.state.runtime.metrics.registry
    return registry.get_sample_value("upwatch_role_restarts_total", {"role": role}) or 0.0


async def test_a_worker_failing_from_inside_is_restarted_and_checks_go_on(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, target: Target, as_alice: InProject
) -> None:
    engine: Engine = app.state.engine
    await eventually(engine.ready.is_set)
    take_job = engine.broker.next_job
    failed = asyncio.Event()

    async def fail_once(region_id: str) -> CheckJob:
        if not failed.is_set():
            failed.set()
            raise RuntimeError("injected worker failure")
        return await take_job(region_id)

    engine.broker.next_job = fail_once  # type: ignore[method-assign]
    monitor = await as_alice.monitor(url=target.url, intervalSeconds=10)
    await eventually(failed.is_set, within=15)
    hits_after_failure = target.hits
    await eventually(lambda: restarts(app, "worker-local") == 1)
    # Checks go on: the target is reached again and results keep being stored.
    await eventually(lambda: target.hits > hits_after_failure, within=25)

    async def stored() -> bool:
        got = await client.get(f"/monitors/{monitor['id']}/checks", headers=cast.alice.headers)
        return got.status_code == 200 and len(got.json()) >= 1

    await eventually(stored, within=10)
    assert restarts(app, "scheduler") == 0
    assert restarts(app, "ingester") == 0
    ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text


async def test_a_stalled_scheduler_turns_readiness_to_503_until_it_moves_again(
    app: FastAPI, client: httpx.AsyncClient, target: Target, as_alice: InProject
) -> None:
    engine: Engine = app.state.engine
    await eventually(engine.ready.is_set)
    first = await client.get("/readyz")
    assert first.status_code == 200, first.text
    publish = engine.broker.publish_jobs
    unstuck = asyncio.Event()

    async def stuck(jobs: Sequence[CheckJob]) -> int:
        await unstuck.wait()  # a scheduler hung on its broker
        return await publish(jobs)

    engine.broker.publish_jobs = stuck  # type: ignore[method-assign]
    await as_alice.monitor(url=target.url, intervalSeconds=10)

    async def not_ready() -> bool:
        return (await client.get("/readyz")).status_code == 503

    await eventually(not_ready, within=20)
    problem = (await client.get("/readyz")).json()
    assert "role scheduler made no progress" in problem["detail"]
    unstuck.set()

    async def ready() -> bool:
        return (await client.get("/readyz")).status_code == 200

    await eventually(ready, within=10)


async def test_regions_are_online_by_what_workers_wrote_to_the_database(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, make_admin: Any
) -> None:
    engine: Engine = app.state.engine
    await eventually(engine.ready.is_set)
    await make_admin(cast.alice, "admin")
    created = await client.post(
        "/regions", headers=cast.alice.headers, json={"code": "eu-west", "name": "EU West"}
    )
    assert created.status_code == 201, created.text
    listed = await client.get("/regions", headers=cast.alice.headers)
    online = {r["code"]: r["online"] for r in listed.json()}
    # `local` has a beating worker in this process; eu-west has none anywhere.
    assert online == {"local": True, "eu-west": False}
