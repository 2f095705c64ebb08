"""Each day keeps its smallest and largest response time, and percentiles of stored days stay
within them."""

from __future__ import annotations

from sqlalchemy import select

from tests.engine.conftest import DAY, REGION, report
from upwatch.engine.broker import MemoryBroker
from upwatch.engine.ingester import Ingester
from upwatch.kit.db import Database
from upwatch.models import DailyAggregate
from upwatch.monitors import statistics
from upwatch.monitors.repository import MonitorRepository


async def _figures(db: Database, monitor_id: str) -> statistics.Figures:
    async with db.sessionmaker() as session:
        repository = MonitorRepository(session)
        first_day = DAY.date().isoformat()
        days = await repository.aggregates([monitor_id], first_day)
        buckets = await repository.histogram_buckets([monitor_id], first_day)
        return statistics.from_aggregates(days, buckets)


async def _range(db: Database, monitor_id: str) -> tuple[float | None, float | None]:
    async with db.sessionmaker() as session:
        row = (
            await session.execute(
                select(DailyAggregate.response_ms_min, DailyAggregate.response_ms_max).where(
                    DailyAggregate.monitor_id == monitor_id
                )
            )
        ).one()
        return row[0], row[1]


async def test_the_percentiles_of_a_day_with_one_check_are_that_checks_time(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    await ingester.ingest([report(monitor_ids[0], response_ms=300.0)])
    figures = await _figures(db, monitor_ids[0])
    assert [figures.percentile(q) for q in (0.5, 0.95, 0.99)] == [300.0, 300.0, 300.0]
    assert figures.average_ms == 300.0


async def test_batches_widen_the_days_range_and_failures_leave_it_alone(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    monitor = monitor_ids[0]
    await ingester.ingest([report(monitor, ok=False)])
    assert await _range(db, monitor) == (None, None)
    await ingester.ingest([report(monitor, response_ms=120.0), report(monitor, response_ms=90.0)])
    await ingester.ingest([report(monitor, response_ms=300.0)])
    await ingester.ingest([report(monitor, ok=False)])
    await ingester.ingest([report(monitor, response_ms=100.0)])
    assert await _range(db, monitor) == (90.0, 300.0)
    figures = await _figures(db, monitor)
    for q in (0.0, 0.5, 0.95, 0.99, 1.0):
        value = figures.percentile(q)
        assert value is not None
        assert 90.0 <= value <= 300.0
    assert figures.percentile(1.0) == 300.0


async def test_a_day_stored_without_a_range_keeps_none_when_more_checks_arrive(
    db: Database, monitor_ids: list[str]
) -> None:
    # A day stored before ranges were kept, whose raw results were gone by the migration:
    # the batch's range is not the day's, so the day stays without one.
    monitor = monitor_ids[0]
    async with db.sessionmaker() as session:
        session.add(
            DailyAggregate(
                monitor_id=monitor,
                region_id=REGION,
                day=DAY.date().isoformat(),
                total=4,
                up=4,
                down=0,
                degraded=0,
                response_ms_sum=400.0,
                response_count=4,
            )
        )
        await session.commit()
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    await ingester.ingest([report(monitor, response_ms=300.0)])
    assert await _range(db, monitor) == (None, None)
    figures = await _figures(db, monitor)
    assert figures.histogram.observed is None
