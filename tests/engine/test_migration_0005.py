"""Migration 0005 carries stored results and day histograms over, and back."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from tests.conftest import BACKEND
from tests.engine.conftest import add_project, insert_early_monitor, migrate
from upwatch.kit.histogram import Histogram
from upwatch.monitors import statistics

OLD_HISTOGRAM = {"0": 1, "3": 2, "40": 5, "120": 1}


async def test_results_and_day_histograms_stored_before_0005_are_carried_over_and_back(
    fresh_engine: AsyncEngine,
) -> None:
    await migrate(fresh_engine, "0004")
    checked = datetime(2026, 3, 1, 12, tzinfo=UTC)
    async with AsyncSession(fresh_engine, expire_on_commit=False) as session:
        project = await add_project(session, "Old", "old@example.com")
        monitor_id = await insert_early_monitor(session, project.id)
        for _ in range(3):
            await session.execute(
                text(
                    "INSERT INTO check_results (monitor_id, region_id, status, checked_at) "
                    "VALUES (:m, 'r', 'up', :at)"
                ),
                {"m": monitor_id, "at": checked if BACKEND == "postgresql" else "2026-03-01"},
            )
        await session.execute(
            text(
                "INSERT INTO daily_aggregates (monitor_id, region_id, day, total, up, down, "
                "degraded, response_ms_sum, response_count, histogram) "
                "VALUES (:m, 'r', '2026-03-01', 9, 9, 0, 0, 900.0, 9, :h)"
            ),
            {"m": monitor_id, "h": json.dumps(OLD_HISTOGRAM)},
        )
        await session.commit()
        monitor_id = monitor_id

    # To the last schema with report ids (0027 keys results by monitor, region and time).
    await migrate(fresh_engine, "0026")
    async with fresh_engine.connect() as connection:
        report_ids = (await connection.execute(text("SELECT report_id FROM check_results"))).all()
        buckets = (
            await connection.execute(
                text("SELECT bucket, count FROM daily_histogram_buckets WHERE monitor_id = :m"),
                {"m": monitor_id},
            )
        ).all()
        columns = await connection.run_sync(
            lambda c: {col["name"] for col in inspect(c).get_columns("daily_aggregates")}
        )
    ids = [r for (r,) in report_ids]
    assert len(set(ids)) == 3
    assert all(len(r) == 32 for r in ids)
    assert "histogram" not in columns
    carried = statistics.from_aggregates([], [(int(b), int(n)) for b, n in buckets])
    before = Histogram.from_json(OLD_HISTOGRAM)
    assert carried.histogram == before
    for q in (0.5, 0.95, 0.99):
        assert carried.percentile(q) == round(before.quantile(q) or 0, 2)

    await migrate(fresh_engine, "0004", down=True)
    async with fresh_engine.connect() as connection:
        restored = (
            await connection.execute(text("SELECT histogram FROM daily_aggregates"))
        ).scalar_one()
    restored = json.loads(restored) if isinstance(restored, str) else restored
    assert Histogram.from_json(restored) == before
