"""Day histograms stored two ways: bucket rows incremented in SQL, or JSON under a row lock.

For each backend, on a throw-away database migrated to head:

- write: one batch's day histograms for ``--monitors`` monitors (one region, today; one new
  response time each, as a batch of 1,000 results spreads them), added to days that already
  hold ~60 buckets:
  ``rows`` is the ingester's own statement (``IngestRepository.add_buckets``: an additive
  upsert), ``json`` reads the day rows locked (``FOR UPDATE``; SQLite's writer lock), merges
  in Python and writes the JSON back (a scratch table with the old layout). Median and p95 ms
  per batch over ``--batches`` batches, and the time of two writers doing ``--batches`` each
  at once (their own connections, same days);
- read: the 90-day percentiles of one monitor with 3 regions (270 days of ~60 buckets):
  ``rows`` sums buckets in SQL (``MonitorRepository.histogram_buckets``), ``json`` reads the
  270 JSON rows and merges them. Median ms over ``--reads`` reads.

    .venv/bin/python bench/histograms.py [--db sqlite|postgresql|both] [--monitors 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Column, Integer, MetaData, String, Table, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from upwatch.config import async_database_url
from upwatch.engine.repository import IngestRepository
from upwatch.kit.histogram import Histogram
from upwatch.migrations import upgrade
from upwatch.models import Monitor, Project, User
from upwatch.monitors.repository import MonitorRepository

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REGIONS = ("r1", "r2", "r3")
TODAY = datetime.now(UTC).date()

scratch = MetaData()
json_days = Table(
    "bench_json_days",
    scratch,
    Column("monitor_id", String(32), primary_key=True),
    Column("region_id", String(32), primary_key=True),
    Column("day", String(10), primary_key=True),
    Column("total", Integer, nullable=False),
    Column("histogram", JSON, nullable=False),
)


def day_histogram(rng: random.Random, values: int) -> Histogram:
    """Response times around a monitor's own typical time, with a slow tail."""
    typical = rng.uniform(20, 400)
    return Histogram(
        rng.lognormvariate(0, 0.35) * typical * (4 if rng.random() < 0.03 else 1)
        for _ in range(values)
    )


class Backend:
    def __init__(self, name: str, url: str, engine: AsyncEngine) -> None:
        self.name = name
        self.url = url
        self.engine = engine
        self.postgresql = name == "postgresql"

    def insert(self, table: Any) -> Any:
        return pg_insert(table) if self.postgresql else sqlite_insert(table)


async def make_backend(name: str, workdir: Path) -> tuple[Backend, Callable[[], Awaitable[None]]]:
    if name == "sqlite":
        url = f"sqlite:///{workdir / 'bench.db'}"

        async def nothing() -> None:
            return None

        engine = create_async_engine(async_database_url(url))
        return Backend(name, url, engine), nothing
    import asyncpg

    database = f"upwatch_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(PG_ADMIN_URL)
    await admin.execute(f'CREATE DATABASE "{database}"')
    await admin.close()
    url = PG_ADMIN_URL.rpartition("/")[0] + f"/{database}"
    engine = create_async_engine(async_database_url(url))

    async def drop() -> None:
        await engine.dispose()
        connection = await asyncpg.connect(PG_ADMIN_URL)
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await connection.close()

    return Backend(name, url, engine), drop


async def seed(backend: Backend, monitors: int) -> list[str]:
    rng = random.Random(7)
    await upgrade(backend.engine)
    async with backend.engine.begin() as connection:
        await connection.run_sync(scratch.create_all)
    async with AsyncSession(backend.engine, expire_on_commit=False) as session:
        owner = User(email="bench@example.com", password_hash=None)
        session.add(owner)
        await session.flush()
        project = Project(name="bench", owner_id=owner.id)
        session.add(project)
        await session.flush()
        items = [
            Monitor(
                project_id=project.id,
                name=f"m{i}",
                type="http",
                url="http://127.0.0.1:9/",
                interval_seconds=60,
                timeout_seconds=5.0,
            )
            for i in range(monitors)
        ]
        session.add_all(items)
        await session.commit()
        ids = sorted(m.id for m in items)
    # Today's day rows (~60 buckets each) in both layouts; plus 90 days x 3 regions for the
    # monitor whose percentiles are read.
    days = [(m, "r1", TODAY.isoformat(), day_histogram(rng, 1200)) for m in ids]
    days += [
        (ids[0], region, (TODAY - timedelta(days=d)).isoformat(), day_histogram(rng, 1440))
        for d in range(1, 90)
        for region in REGIONS
    ]
    async with AsyncSession(backend.engine) as session:
        bucket_rows = [
            {"monitor_id": m, "region_id": r, "day": d, "bucket": b, "count": n}
            for m, r, d, h in days
            for b, n in h.buckets()
        ]
        await IngestRepository(session).add_buckets(bucket_rows)
        json_rows = [
            {"monitor_id": m, "region_id": r, "day": d, "total": h.count, "histogram": h.to_json()}
            for m, r, d, h in days
        ]
        for i in range(0, len(json_rows), 500):
            await session.execute(backend.insert(json_days).values(json_rows[i : i + 500]))
        await session.commit()
    return ids


def batch(rng: random.Random, ids: list[str]) -> dict[str, Histogram]:
    """One batch's additions: a few response times per monitor (1,000 results / monitors)."""
    per_monitor = max(1, 1000 // len(ids))
    return {m: Histogram(rng.uniform(20, 400) for _ in range(per_monitor)) for m in ids}


async def write_rows(backend: Backend, add: dict[str, Histogram]) -> None:
    day = TODAY.isoformat()
    async with AsyncSession(backend.engine) as session:
        await IngestRepository(session).add_buckets(
            [
                {"monitor_id": m, "region_id": "r1", "day": day, "bucket": b, "count": n}
                for m, h in add.items()
                for b, n in h.buckets()
            ]
        )
        await session.commit()


async def write_json(backend: Backend, add: dict[str, Histogram]) -> None:
    day = TODAY.isoformat()
    async with AsyncSession(backend.engine) as session:
        query = (
            select(json_days)
            .where(json_days.c.monitor_id.in_(sorted(add)), json_days.c.day == day)
            .order_by(json_days.c.monitor_id)
        )
        if backend.postgresql:
            query = query.with_for_update()
        else:  # take the writer lock before reading, as the ingester does
            await session.execute(
                json_days.update().where(json_days.c.day == "none").values(total=0)
            )
        stored = {r.monitor_id: r for r in (await session.execute(query)).all()}
        values = []
        for monitor_id, histogram in sorted(add.items()):
            old = stored.get(monitor_id)
            merged = histogram if old is None else Histogram.from_json(old.histogram) + histogram
            values.append(
                {
                    "monitor_id": monitor_id,
                    "region_id": "r1",
                    "day": day,
                    "total": merged.count,
                    "histogram": merged.to_json(),
                }
            )
        statement = backend.insert(json_days)  # one statement, many parameter sets: as rows
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=["monitor_id", "region_id", "day"],
                set_={"total": statement.excluded.total, "histogram": statement.excluded.histogram},
            ),
            values,
        )
        await session.commit()


async def read_rows(backend: Backend, monitor_id: str, first_day: str) -> float | None:
    async with AsyncSession(backend.engine) as session:
        buckets = await MonitorRepository(session).histogram_buckets([monitor_id], first_day)
    return Histogram.from_buckets(buckets).quantile(0.99)


async def read_json(backend: Backend, monitor_id: str, first_day: str) -> float | None:
    async with AsyncSession(backend.engine) as session:
        rows = await session.execute(
            select(json_days.c.histogram).where(
                json_days.c.monitor_id == monitor_id, json_days.c.day >= first_day
            )
        )
        total = Histogram()
        for (data,) in rows.all():
            total.merge(Histogram.from_json(json.loads(data) if isinstance(data, str) else data))
    return total.quantile(0.99)


def ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


async def timed(
    call: Callable[[Any], Awaitable[Any]], times: int, make: Callable[[], Any] = lambda: None
) -> list[float]:
    samples = []
    for _ in range(times):
        argument = make()  # built outside the measured time
        started = time.perf_counter()
        await call(argument)
        samples.append(time.perf_counter() - started)
    return samples


async def run_backend(name: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as workdir:
        backend, drop = await make_backend(name, Path(workdir))
        try:
            ids = await seed(backend, args.monitors)
            rng = random.Random(11)
            result: dict[str, Any] = {"db": name, "monitors": args.monitors}
            for layout, write in (("rows", write_rows), ("json", write_json)):
                samples = await timed(
                    lambda add, w=write: w(backend, add), args.batches, lambda: batch(rng, ids)
                )
                result[f"write_{layout}_p50_ms"] = ms(samples, 0.5)
                result[f"write_{layout}_p95_ms"] = ms(samples, 0.95)
                # Two writers at once, on their own connections, adding to the same days.
                started = time.perf_counter()
                await asyncio.gather(
                    *(
                        timed(
                            lambda add, w=write: w(backend, add),
                            args.batches,
                            lambda: batch(rng, ids),
                        )
                        for _ in range(2)
                    )
                )
                result[f"write_{layout}_two_writers_s"] = round(time.perf_counter() - started, 2)
            first_day = (TODAY - timedelta(days=89)).isoformat()
            answers = {}
            for layout, read in (("rows", read_rows), ("json", read_json)):
                samples = await timed(
                    lambda _none, r=read: r(backend, ids[0], first_day), args.reads
                )
                result[f"read90d_{layout}_p50_ms"] = ms(samples, 0.5)
                answers[layout] = await read(backend, ids[0], first_day)
            assert answers["rows"] == answers["json"], answers  # the same figures either way
            result["bucket_rows_per_day"] = round(
                sum(len(day_histogram(random.Random(i), 1440).buckets()) for i in range(50)) / 50,
                1,
            )
            return result
        finally:
            await backend.engine.dispose()
            await drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--monitors", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--reads", type=int, default=50)
    args = parser.parse_args()
    names = ("sqlite", "postgresql") if args.db == "both" else (args.db,)
    for name in names:
        result = asyncio.run(run_backend(name, args))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
