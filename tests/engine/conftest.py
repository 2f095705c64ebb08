"""The engine's data path without the app: a real database, monitors written straight into it,
and reports as a worker makes them."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import column, func, insert, select, table
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from tests.conftest import BACKEND, POSTGRES_URL, _empty_tables, _postgres_admin, make_settings
from upwatch.config import async_database_url
from upwatch.engine.broker import CheckReport
from upwatch.kit.db import Database
from upwatch.migrations import alembic_config
from upwatch.models import CheckResult, DailyAggregate, HistogramBucket, Monitor, Region
from upwatch.probes.outcome import ErrorKind, Outcome, Timings

REGION = "region-a"
# An hour ago, on the hour: in the past whatever time the suite runs (a time ahead of the
# engine's clock is forgotten as a skewed one, which made some tests fail before noon UTC).
DAY = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
_sequence = itertools.count()


@pytest.fixture
async def db(database_url: str, tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(make_settings(database_url, tmp_path))
    yield database
    await database.dispose()
    await _empty_tables(database_url)


async def add_project(session: AsyncSession, name: str, owner_email: str) -> EarlyProject:
    """A project and its owner, written straight into the database with only the columns of
    their first schemas (0001, 0002): tests of old migrations run before later columns exist,
    so they cannot use the models."""
    stamp = DAY if BACKEND == "postgresql" else DAY.strftime("%Y-%m-%d %H:%M:%S")
    owner = {
        "id": uuid.uuid4().hex,
        "email": owner_email,
        "password_hash": None,
        "first_name": "",
        "last_name": "",
        "image": "",
        "roles": '["user"]',
        "is_email_verified": False,
        "token_version": 0,
        "settings": "{}",
        "created_at": stamp,
        "updated_at": stamp,
    }
    project = {
        "id": uuid.uuid4().hex,
        "name": name,
        "description": "",
        "owner_id": owner["id"],
        "created_at": stamp,
        "updated_at": stamp,
    }
    for name_of_table, row in (("users", owner), ("projects", project)):
        await session.execute(insert(table(name_of_table, *(column(c) for c in row))), row)
    return EarlyProject(project["id"])


@dataclass(frozen=True)
class EarlyProject:
    id: str


@pytest.fixture
async def monitor_ids(db: Database) -> list[str]:
    """Three active monitors that are down after one failure."""
    async with db.sessionmaker() as session:
        project = await add_project(session, "Shop", "owner@example.com")
        # Results name their region by its number: the region has to exist.
        session.add(Region(id=REGION, code=REGION, name="Region A", created_at=datetime.now(UTC)))
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


async def rows_per_report(db: Database, reports: Sequence[CheckReport]) -> dict[str, int]:
    """How many rows each of ``reports`` has (its key: monitor and time; one region)."""
    async with db.sessionmaker() as session:
        rows = await session.execute(
            select(CheckResult.monitor_number, CheckResult.checked_at, func.count()).group_by(
                CheckResult.monitor_number, CheckResult.checked_at
            )
        )
        stored = {(m, at): int(n) for m, at, n in rows.all()}
        numbers = dict((await session.execute(select(Monitor.id, Monitor.number))).all())
    counts = {r.id: stored.get((numbers[r.monitor_id], r.checked_at), 0) for r in reports}
    unmatched = sum(stored.values()) - sum(counts.values())
    # Rows of no report given show up as their own entry, so an equality test sees them.
    return {**counts, "unmatched": unmatched} if unmatched else counts


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


@pytest.fixture
async def fresh_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An empty database of this test's own, to migrate step by step."""
    if BACKEND == "sqlite":
        engine = create_async_engine(async_database_url(f"sqlite:///{tmp_path / 'm.db'}"))
        yield engine
        await engine.dispose()
        return
    name = f"upwatch_migration_{uuid.uuid4().hex[:12]}"
    try:
        await _postgres_admin(f'CREATE DATABASE "{name}"')
    except OSError as exc:
        reason = f"PostgreSQL not reachable at {POSTGRES_URL}: {exc}"
        if os.environ.get("UPWATCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)  # CI requires PostgreSQL: a skip there would hide the test
        pytest.skip(reason)
    base, _, _ = POSTGRES_URL.rpartition("/")
    engine = create_async_engine(async_database_url(f"{base}/{name}"))
    yield engine
    await engine.dispose()
    await _postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def migrate(engine: AsyncEngine, revision: str, down: bool = False) -> None:
    def step(connection: Connection) -> None:
        config = alembic_config(connection)
        if down:
            command.downgrade(config, revision)
        else:
            command.upgrade(config, revision)

    async with engine.begin() as connection:
        await connection.run_sync(step)


async def insert_early_monitor(session: AsyncSession, project_id: str) -> str:
    """A monitor row with only the columns of the first monitor schema (0003): a test of an
    old migration cannot use the model, which names columns added later."""
    monitor_id = uuid.uuid4().hex
    stamp = DAY if BACKEND == "postgresql" else DAY.strftime("%Y-%m-%d %H:%M:%S")
    row = {
        "id": monitor_id,
        "project_id": project_id,
        "name": "old",
        "type": "http",
        "url": "http://127.0.0.1:9/",
        "method": "GET",
        "headers": "{}",
        "expected_status_codes": "[]",
        "interval_seconds": 60,
        "timeout_seconds": 5.0,
        "retries": 0,
        "region_ids": "[]",
        "is_active": True,
        "status": "pending",
        "state": "{}",
        "created_at": stamp,
        "updated_at": stamp,
    }
    await session.execute(insert(table("monitors", *(column(name) for name in row))), row)
    return monitor_id
