"""The engine's data path without the app: a real database, monitors written straight into it,
and reports as a worker makes them."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.conftest import _empty_tables, make_settings
from upwatch.engine.broker import CheckReport
from upwatch.kit.db import Database
from upwatch.models import CheckResult, DailyAggregate, HistogramBucket, Monitor, Project, User
from upwatch.probes.outcome import ErrorKind, Outcome, Timings

REGION = "region-a"
# Noon, so a batch never straddles midnight: every report of a test falls on one UTC day.
DAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
_sequence = itertools.count()


@pytest.fixture
async def db(database_url: str, tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(make_settings(database_url, tmp_path))
    yield database
    await database.dispose()
    await _empty_tables(database_url)


@pytest.fixture
async def monitor_ids(db: Database) -> list[str]:
    """Three active monitors that are down after one failure."""
    async with db.sessionmaker() as session:
        owner = User(email="owner@example.com", password_hash=None)
        session.add(owner)
        await session.flush()
        project = Project(name="Shop", owner_id=owner.id)
        session.add(project)
        await session.flush()
        monitors = [
            Monitor(
                project_id=project.id,
                name=f"site {i}",
                type="http",
                url=f"http://127.0.0.1:9/{i}",
                interval_seconds=60,
                timeout_seconds=5.0,
                retries=0,
                region_ids=[REGION],
            )
            for i in range(3)
        ]
        session.add_all(monitors)
        await session.commit()
        return [m.id for m in monitors]


def report(monitor_id: str, ok: bool = True, response_ms: float | None = None) -> CheckReport:
    """A report as a worker makes it, with its own id; checked on ``DAY``."""
    at = DAY + timedelta(milliseconds=next(_sequence))
    if ok:
        ms = 40.0 + next(_sequence) % 200 if response_ms is None else response_ms
        outcome = Outcome(
            ok=True,
            response_time_ms=ms,
            status_code=200,
            timings=Timings(
                dns_ms=None, connect_ms=1.5, tls_ms=None, first_byte_ms=ms - 2, total_ms=ms
            ),
        )
    else:
        outcome = Outcome(
            ok=False, response_time_ms=None, error_kind=ErrorKind.CONNECT, error="refused"
        )
    return CheckReport(monitor_id, REGION, at.timestamp(), at.timestamp(), at, outcome)


async def rows_per_report(db: Database) -> dict[str, int]:
    async with db.sessionmaker() as session:
        rows = await session.execute(
            select(CheckResult.report_id, func.count()).group_by(CheckResult.report_id)
        )
        return {report_id: int(n) for report_id, n in rows.all()}


async def day_totals(db: Database) -> tuple[int, int, int]:
    """(checks counted in day aggregates, response times counted, histogram bucket counts)."""
    async with db.sessionmaker() as session:
        total, timed = (
            await session.execute(
                select(
                    func.coalesce(func.sum(DailyAggregate.total), 0),
                    func.coalesce(func.sum(DailyAggregate.response_count), 0),
                )
            )
        ).one()
        buckets = await session.scalar(select(func.coalesce(func.sum(HistogramBucket.count), 0)))
        return int(total), int(timed), int(buckets or 0)
