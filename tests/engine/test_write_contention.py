"""API writes beside a busy ingester: they wait their turn for the database and succeed."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
from fastapi import FastAPI

from tests.app_settings import overriding, plans
from tests.conftest import InProject
from upwatch.engine.broker import CheckReport
from upwatch.engine.embedded import Engine
from upwatch.probes.outcome import Outcome

_sequence = itertools.count()


# The engine's own scheduler stays idle: the monitors point at a closed port and are
# checked every hour; the test alone keeps the ingester busy.
settings_overrides = overriding(
    plans_file=plans("[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = 200\n"),
    allow_private_targets=True,
)


def reports(monitor_id: str, region_id: str, count: int) -> list[CheckReport]:
    now = datetime.now(UTC)
    outcome = Outcome(ok=True, response_time_ms=float(next(_sequence) % 300), status_code=200)
    at = now.timestamp()
    return [CheckReport(monitor_id, region_id, at, at, now, outcome) for _ in range(count)]


@contextlib.asynccontextmanager
async def busy_ingester(engine: Engine, monitor_id: str) -> AsyncIterator[list[int]]:
    """Store batches of 500 results back to back, each its own write transaction, until the
    block ends; yields the list of batch sizes stored so far."""
    stored: list[int] = []
    under_way = asyncio.Event()

    async def feed() -> None:
        while True:
            batch = reports(monitor_id, engine.local_region_id, 500)
            stored.append(len(await engine.ingester.ingest(batch)))
            under_way.set()

    task = asyncio.create_task(feed())
    try:
        await under_way.wait()  # the ingester has written once: it is under way
        yield stored
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_monitors_created_while_the_ingester_writes_without_pause_are_all_created(
    app: FastAPI, client: httpx.AsyncClient, as_alice: InProject
) -> None:
    engine: Engine = app.state.engine
    async with asyncio.timeout(60):
        await engine.ready.wait()
    fed = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=3600)
    statuses: list[int] = []
    async with busy_ingester(engine, fed["id"]) as stored:
        started = time.monotonic()
        for round_ in range(4):
            answers = await asyncio.gather(
                *(
                    as_alice.post(
                        "/monitors",
                        name=f"site {round_}-{n}",
                        type="http",
                        url=f"http://127.0.0.1:9/{round_}/{n}",
                        intervalSeconds=3600,
                    )
                    for n in range(10)
                )
            )
            statuses += [answer.status_code for answer in answers]
        batches_meanwhile = len(stored)
    assert statuses == [201] * 40, [s for s in statuses if s != 201]
    # The ingester kept writing while the monitors were created: the two really contended.
    assert batches_meanwhile >= 2, (batches_meanwhile, time.monotonic() - started)
