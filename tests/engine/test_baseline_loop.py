"""The baseline loop on a real database: stored results and day histograms in, a verdict in the
monitor's state out, and the next check reads it."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import insert, update

from tests.engine.conftest import DAY, REGION, report
from upwatch.engine.baseline import BaselineLoop
from upwatch.engine.broker import MemoryBroker
from upwatch.engine.ingester import Ingester
from upwatch.kit.clock import ManualClock
from upwatch.kit.db import Database
from upwatch.kit.histogram import bucket_of
from upwatch.models import HistogramBucket, Monitor


async def _opt_in(db: Database, monitor_id: str, factor: float | None) -> None:
    async with db.sessionmaker() as session:
        await session.execute(
            update(Monitor).where(Monitor.id == monitor_id).values(baseline_factor=factor)
        )
        await session.commit()


async def _a_fast_week(db: Database, monitor_id: str, count: int = 1000) -> None:
    """A day before the hour, of fast answers (50 ms) only."""
    async with db.sessionmaker() as session:
        await session.execute(
            insert(HistogramBucket).values(
                monitor_id=monitor_id,
                region_id=REGION,
                day=(DAY.date() - timedelta(days=1)).isoformat(),
                bucket=bucket_of(50.0),
                count=count,
            )
        )
        await session.commit()


async def _monitor(db: Database, monitor_id: str) -> Monitor:
    async with db.sessionmaker() as session:
        found = await session.get(Monitor, monitor_id)
        assert found is not None
        return found


async def test_an_hour_far_slower_than_the_week_is_a_verdict_the_next_check_turns_degraded(
    db: Database, monitor_ids: list[str]
) -> None:
    slow, untouched = monitor_ids[0], monitor_ids[1]
    await _opt_in(db, slow, 3.0)
    await _a_fast_week(db, slow)
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    await ingester.ingest([report(slow, response_ms=400.0) for _ in range(30)])
    await ingester.ingest([report(untouched, response_ms=400.0) for _ in range(30)])
    assert (await _monitor(db, slow)).status == "up"

    loop = BaselineLoop(db, ManualClock(DAY + timedelta(minutes=30)))
    verdicts = await loop.run_once()

    assert set(verdicts) == {slow}  # only the monitor that opted in is judged
    verdict = verdicts[slow]
    assert verdict is not None
    assert "above 3 x the 7-day p95" in verdict
    assert (await _monitor(db, slow)).state["baseline"] == verdict
    await ingester.ingest([report(slow, response_ms=400.0)])
    after = await _monitor(db, slow)
    assert after.status == "degraded"
    assert after.state["baseline"] == verdict  # the ingester keeps the loop's verdict


async def test_too_few_checks_in_the_hour_give_no_verdict(
    db: Database, monitor_ids: list[str]
) -> None:
    monitor_id = monitor_ids[0]
    await _opt_in(db, monitor_id, 2.0)
    await _a_fast_week(db, monitor_id)
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    await ingester.ingest([report(monitor_id, response_ms=900.0) for _ in range(29)])
    verdicts = await BaselineLoop(db, ManualClock(DAY + timedelta(minutes=30))).run_once()
    assert verdicts == {monitor_id: None}
    assert (await _monitor(db, monitor_id)).state.get("baseline") is None


async def test_a_verdict_clears_once_the_hour_is_fast_again_and_the_monitor_is_up(
    db: Database, monitor_ids: list[str]
) -> None:
    monitor_id = monitor_ids[0]
    await _opt_in(db, monitor_id, 3.0)
    await _a_fast_week(db, monitor_id)
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    await ingester.ingest([report(monitor_id, response_ms=400.0) for _ in range(30)])
    clock = ManualClock(DAY + timedelta(minutes=30))
    loop = BaselineLoop(db, clock)
    assert (await loop.run_once())[monitor_id] is not None
    # Two hours on, the slow hour has left the window.
    clock.advance(timedelta(hours=2))
    assert (await loop.run_once())[monitor_id] is None
    await ingester.ingest([report(monitor_id, response_ms=50.0)])
    assert (await _monitor(db, monitor_id)).status == "up"


async def test_a_monitor_that_opts_out_keeps_no_degraded_status_from_an_old_verdict(
    db: Database, monitor_ids: list[str]
) -> None:
    monitor_id = monitor_ids[0]
    await _opt_in(db, monitor_id, 3.0)
    await _a_fast_week(db, monitor_id)
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    await ingester.ingest([report(monitor_id, response_ms=400.0) for _ in range(30)])
    await BaselineLoop(db, ManualClock(DAY + timedelta(minutes=30))).run_once()
    await _opt_in(db, monitor_id, None)
    await ingester.ingest([report(monitor_id, response_ms=400.0)])
    assert (await _monitor(db, monitor_id)).status == "up"
