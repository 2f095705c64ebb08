""" "Check now" in an API process of a distributed deployment, without a worker to run it.

The path with a worker (the job reaches the region's worker process, the API answers with the
stored row) runs with real processes in tests/engine/test_distributed.py.
"""

from __future__ import annotations

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from upwatch.engine.broker import MemoryBroker
from upwatch.engine.remotecheck import RemoteChecks
from upwatch.runtime import Runtime

# An API process: no worker of its own beats anywhere.
settings_overrides = overriding(engine=False, allow_private_targets=True)


async def test_check_now_without_a_worker_online_in_the_monitors_regions_answers_503(
    runtime: Runtime, client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    broker = MemoryBroker()
    runtime.checks = RemoteChecks(
        runtime.db, broker, runtime.clock, online_seconds=60, extra_wait_seconds=1
    )
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    answer = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert_problem(answer, 503)
    assert "no worker" in answer.json()["detail"]
    assert answer.headers["Retry-After"] == "30"
    assert broker.depth() == {"results": 0}  # no job was sent
