"""The migrations build exactly the tables the models describe, on each database, and the
hour counts of migration 0020 start filled from the results already stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import create_async_engine

from upwatch.config import async_database_url
from upwatch.kit.db import Base
from upwatch.migrations import alembic_config


async def test_the_migrated_schema_is_the_one_the_models_describe(database_url: str) -> None:
    engine = create_async_engine(async_database_url(database_url))
    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(
                lambda sync: compare_metadata(MigrationContext.configure(sync), Base.metadata)
            )
    finally:
        await engine.dispose()
    assert differences == []


def test_the_hour_counts_start_from_the_last_day_of_stored_results(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'upgrade.db'}")
    now = datetime.now(UTC).replace(tzinfo=None)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0019")
        for n, (ago, status) in enumerate(
            [
                (timedelta(minutes=1), "up"),
                (timedelta(minutes=2), "down"),
                (timedelta(hours=30), "up"),
            ]
        ):
            connection.execute(
                text(
                    "INSERT INTO check_results (monitor_id, report_id, region_id, status, "
                    "checked_at) VALUES ('m1', :report, 'r1', :status, :at)"
                ),
                {"report": f"report-{n}", "status": status, "at": now - ago},
            )
        command.upgrade(alembic_config(connection), "head")
        rows = connection.execute(
            text("SELECT hour, total, up, down, degraded FROM hourly_counts ORDER BY hour")
        ).all()
    engine.dispose()
    hours = {(now - timedelta(minutes=m)).strftime("%Y-%m-%dT%H") for m in (1, 2)}
    assert sum(row.total for row in rows) == 2  # the result of 30 hours ago is left out
    assert {row.hour for row in rows} == hours
    assert (sum(r.up for r in rows), sum(r.down for r in rows), sum(r.degraded for r in rows)) == (
        1,
        1,
        0,
    )
