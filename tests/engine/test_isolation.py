"""One tenant cannot stall the others: a monitor whose assertions cost all their budget, checked
over and over in the same worker process as 100 ordinary monitors, leaves their checks on time
and their recorded response times as they are."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time
from collections.abc import Iterator

import pytest

from tests.engine.test_worker_process import REGION, config, job, results, running
from tests.live_server import ThreadedTarget
from upwatch.engine.broker import CheckJob, CheckReport, MemoryBroker
from upwatch.engine.workerprocess import WorkerProcess
from upwatch.probes.assertions import Assertion
from upwatch.probes.json_paths import STEPS

# Settings, not speeds: what a loaded machine may still be held to (the bound is 1 s).
LATE = float(os.environ.get("UPWATCH_TEST_LATENESS_SECONDS", "1"))
# How far the ordinary checks' recorded times may move beside the costly ones (median; three
# times that at p95): a loaded machine's noise. Judged on the probe loop they moved 150-400 ms.
MARGIN = float(os.environ.get("UPWATCH_TEST_TIMING_MARGIN_MS", "30"))
ORDINARY = 100
DELAY = 0.05  # the ordinary target answers after 50 ms
# About 1 MiB of JSON (the probe's cap): walking it for a key it lacks spends the whole budget.
HEAVY_BODY = json.dumps(
    {"pad": "x" * 50_000, "items": [{"id": i, "tags": ["a", "b"]} for i in range(27_000)]}
)
# Each fails its check: the path when its budget runs out, the pattern at its time limit.
COSTLY = (
    (Assertion(source="json", operator="exists", path="$..missing"),),
    (Assertion(source="body", operator="matches", value=json.dumps("(x+x+)+y")),),
)


@pytest.fixture
def ordinary_target() -> Iterator[str]:
    with ThreadedTarget(delay=DELAY) as server:
        yield f"{server.base}/ok"


@pytest.fixture
def heavy_target() -> Iterator[str]:
    with ThreadedTarget(body=HEAVY_BODY.encode()) as server:
        yield f"{server.base}/heavy"


def spread(jobs: list[CheckJob], seconds: float) -> list[CheckJob]:
    """Due over ``seconds`` from a moment ahead, as a scheduler spreads monitors."""
    start = time.time() + 0.5
    return [
        dataclasses.replace(one, due_at=start + seconds * i / len(jobs))
        for i, one in enumerate(jobs)
    ]


async def checked(broker: MemoryBroker, jobs: list[CheckJob]) -> list[CheckReport]:
    for one in jobs:
        assert await broker.publish_job(one)
    return await results(broker, len(jobs))


async def test_a_monitor_spending_its_whole_budget_leaves_100_others_on_time_and_their_times_true(
    ordinary_target: str, heavy_target: str
) -> None:
    # Two costly monitors (one of each kind), each checked twice in the same two seconds (a
    # monitor is checked every 10 s at most often); each check costs its whole bound.
    costly_specs = [dataclasses.replace(job(heavy_target).spec, assertions=c) for c in COSTLY]
    costly = [CheckJob(spec=spec, region_id=REGION, due_at=0) for spec in costly_specs * 2]
    ordinary = [job(ordinary_target) for _ in range(ORDINARY)]
    mixed = list(ordinary)
    for n, one in enumerate(costly):
        mixed.insert(n * (ORDINARY // len(costly) + 1), one)

    broker = MemoryBroker()
    async with running(WorkerProcess(broker, config(concurrency=50))):
        # The judging process starts on first use (seconds on a loaded machine): started
        # before anything is measured, as it is after a worker's first minute.
        await checked(broker, [dataclasses.replace(costly[0], due_at=time.time())])
        alone = await checked(broker, spread([job(ordinary_target) for _ in range(ORDINARY)], 2.0))
        beside = await checked(broker, spread(mixed, 2.0))

    costly_ids = {spec.id for spec in costly_specs}
    failed = [r for r in beside if r.monitor_id in costly_ids]
    assert len(failed) == len(costly)
    assert {r.outcome.error for r in failed} == {
        f"assertion 1 (json $..missing exists): the JSONPath visited more than {STEPS} values "
        "of this body",
        f"assertion 1 (body matches {COSTLY[1][0].value}): the pattern took longer than 0.05s "
        "on this body",
    }

    kept = [r for r in beside if r.monitor_id not in costly_ids]
    assert len(kept) == ORDINARY
    assert all(r.outcome.ok for r in kept)
    lateness = [r.started_at - r.due_at for r in kept]
    assert statistics.quantiles(lateness, n=100)[98] < LATE, f"lateness {sorted(lateness)[-5:]}"

    def times(reports: list[CheckReport]) -> list[float]:
        return [r.outcome.response_time_ms or 0.0 for r in reports]

    # Recorded times hold the target's 50 ms and little else, beside the costly ones as alone.
    assert min(times(kept)) >= DELAY * 1000
    spread_of = f"alone {quantiles(times(alone))}, beside {quantiles(times(kept))}"
    assert statistics.median(times(kept)) < statistics.median(times(alone)) + MARGIN, spread_of
    assert quantiles(times(kept))[18] < quantiles(times(alone))[18] + 3 * MARGIN, spread_of


def quantiles(values: list[float]) -> list[float]:
    return [round(q, 1) for q in statistics.quantiles(values, n=20)]
