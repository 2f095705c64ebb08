"""Migration 0007 gives each stored day its smallest and largest response time, from the raw
results when they are all still there, and takes them away again."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import column, insert, inspect, table, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from tests.engine.conftest import add_project, insert_early_monitor, migrate
from upwatch.kit.db import UTCDateTime


async def test_days_stored_before_0007_get_their_range_only_from_complete_raw_results(
    fresh_engine: AsyncEngine,
) -> None:
    await migrate(fresh_engine, "0006")
    async with AsyncSession(fresh_engine, expire_on_commit=False) as session:
        project = await add_project(session, "Old", "old@example.com")
        monitor_id = await insert_early_monitor(session, project.id)
        raw = [
            # 1 March: every timed check is still stored (late in the UTC day, too).
            ("r", datetime(2026, 3, 1, 0, 0, tzinfo=UTC), 120.0),
            ("r", datetime(2026, 3, 1, 23, 59, 59, tzinfo=UTC), 300.0),
            ("r", datetime(2026, 3, 1, 12, tzinfo=UTC), None),
            # 2 March: retention dropped four of the five timed checks.
            ("r", datetime(2026, 3, 2, 12, tzinfo=UTC), 80.0),
            # 3 March: failures only.
            ("r", datetime(2026, 3, 3, 12, tzinfo=UTC), None),
        ]
        # Only the columns this old schema has (the model's later ones are not there yet).
        await session.execute(
            insert(
                table(
                    "check_results",
                    *(
                        column(name)
                        for name in (
                            "monitor_id",
                            "report_id",
                            "region_id",
                            "status",
                            "response_time_ms",
                        )
                    ),
                    column("checked_at", UTCDateTime()),
                )
            ),
            [
                {
                    "monitor_id": monitor_id,
                    "report_id": uuid.uuid4().hex,
                    "region_id": region,
                    "status": "up" if ms is not None else "down",
                    "response_time_ms": ms,
                    "checked_at": at,
                }
                for region, at, ms in raw
            ],
        )
        days = [
            ("r", "2026-03-01", 3, 2, 420.0),
            ("r", "2026-03-02", 5, 5, 500.0),
            ("r", "2026-03-03", 1, 0, 0.0),
            ("other", "2026-03-01", 2, 2, 200.0),  # no raw results in this region at all
        ]
        for region, day, total, timed, ms_sum in days:
            await session.execute(
                text(
                    "INSERT INTO daily_aggregates (monitor_id, region_id, day, total, up, down, "
                    "degraded, response_ms_sum, response_count) "
                    "VALUES (:m, :r, :d, :t, :n, :f, 0, :s, :n)"
                ),
                {
                    "m": monitor_id,
                    "r": region,
                    "d": day,
                    "t": total,
                    "n": timed,
                    "f": total - timed,
                    "s": ms_sum,
                },
            )
        await session.commit()

    await migrate(fresh_engine, "0026")  # the last schema of wide result rows
    async with fresh_engine.connect() as connection:
        rows = await connection.execute(
            text("SELECT region_id, day, response_ms_min, response_ms_max FROM daily_aggregates")
        )
        ranges = {(region, day): (low, high) for region, day, low, high in rows.all()}
    assert ranges == {
        ("r", "2026-03-01"): (120.0, 300.0),
        ("r", "2026-03-02"): (None, None),
        ("r", "2026-03-03"): (None, None),
        ("other", "2026-03-01"): (None, None),
    }

    await migrate(fresh_engine, "0006", down=True)
    async with fresh_engine.connect() as connection:
        columns = await connection.run_sync(
            lambda c: {col["name"] for col in inspect(c).get_columns("daily_aggregates")}
        )
    assert "response_ms_min" not in columns
    assert "response_ms_max" not in columns
