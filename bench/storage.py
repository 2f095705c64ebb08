"""Bytes a check takes on disk, through the real ingester, without the service around it.

Migrates a new SQLite database (or a new PostgreSQL database), adds one project with
``--monitors`` HTTP monitors and one region, then stores ``--checks`` results through
``Ingester.ingest`` in batches of one check per monitor, a second apart per round, in time
order: passing HTTP checks with a status code, a response time and the probe's four measured
phases, every ``--failure-every``-th a connection failure. Prints the result table's size
(SQLite: ``dbstat`` pages of the table and its indexes; PostgreSQL:
``pg_total_relation_size``) over its rows, and the same for the day, hour and histogram counts
and the journal of unflushed batches. CPU time does not enter these figures, so a busy
machine changes only how long the run takes.

    .venv/bin/python bench/storage.py [--monitors 1000] [--checks 200000] [--db sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from upwatch.config import Settings
from upwatch.engine.broker import CheckReport, MemoryBroker
from upwatch.engine.ingester import Ingester
from upwatch.kit.db import Database
from upwatch.migrations import upgrade
from upwatch.models import Monitor, Project, Region, User
from upwatch.probes.outcome import ErrorKind, Outcome, Timings

START = datetime(2026, 11, 1, tzinfo=UTC)
TABLES = ("check_results", "daily_aggregates", "hourly_counts", "daily_histogram_buckets")


def outcome(rng: random.Random, n: int, failure_every: int) -> Outcome:
    if failure_every and n % failure_every == 0:
        return Outcome(
            ok=False, response_time_ms=None, error_kind=ErrorKind.CONNECT, error="refused"
        )
    total = rng.uniform(0.4, 180.0)
    connect = rng.uniform(0.05, total / 4)
    return Outcome(
        ok=True,
        response_time_ms=total,
        status_code=200,
        timings=Timings(
            dns_ms=None, connect_ms=connect, tls_ms=None, first_byte_ms=total * 0.9, total_ms=total
        ),
    )


async def fill(settings: Settings, monitors: int, checks: int, failure_every: int) -> float:
    db = Database(settings)
    await upgrade(db.engine)
    rng = random.Random(39)
    async with db.sessionmaker() as session:
        owner = User(email="bench@example.com", first_name="", last_name="", image="")
        session.add(owner)
        await session.flush()
        project = Project(name="bench", description="", owner_id=owner.id)
        region = Region(code="bench", name="Bench", created_at=START)
        session.add_all([project, region])
        await session.flush()
        rows = [
            Monitor(
                project_id=project.id,
                name=f"m{i}",
                type="http",
                url=f"http://127.0.0.1:9/{i}",
                interval_seconds=60,
                timeout_seconds=5.0,
                region_ids=[region.id],
            )
            for i in range(monitors)
        ]
        session.add_all(rows)
        await session.commit()
        ids, region_id = [m.id for m in rows], region.id
    ingester = Ingester(db, MemoryBroker(), lambda: (region_id,))
    started = time.perf_counter()
    n = 0
    for round_ in range(-(-checks // monitors)):
        batch = []
        for i, monitor_id in enumerate(ids[: checks - n]):
            at = START + timedelta(seconds=round_, milliseconds=i)
            stamp = at.timestamp()
            batch.append(
                CheckReport(monitor_id, region_id, stamp, stamp, at, outcome(rng, n, failure_every))
            )
            n += 1
        await ingester.ingest(batch)
    elapsed = time.perf_counter() - started
    await db.dispose()
    return elapsed


def sqlite_sizes(path: Path) -> dict[str, tuple[int, int]]:
    connection = sqlite3.connect(path)
    try:
        sizes = {}
        for table in (*TABLES, "unflushed_batches"):
            size = connection.execute(
                "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ? OR name IN "
                "(SELECT name FROM sqlite_master WHERE tbl_name = ? AND type = 'index')",
                (table, table),
            ).fetchone()[0]
            rows = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            sizes[table] = (int(size), int(rows))
        return sizes
    finally:
        connection.close()


async def postgresql_sizes(url: str) -> dict[str, tuple[int, int]]:
    db = Database(Settings(database_url=url))
    sizes = {}
    async with db.engine.connect() as connection:
        for table in (*TABLES, "unflushed_batches"):
            size, rows = (
                await connection.execute(
                    text(f"SELECT pg_total_relation_size('{table}'), count(*) FROM {table}")  # noqa: S608
                )
            ).one()
            sizes[table] = (int(size), int(rows))
    await db.dispose()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=1000)
    parser.add_argument("--checks", type=int, default=200_000)
    parser.add_argument("--failure-every", type=int, default=50)
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="upwatch-storage-"))
    os.environ.setdefault("UPWATCH_SECRET_KEY", "bench-" + uuid.uuid4().hex)
    if args.db == "postgresql":
        name = f"bench_storage_{uuid.uuid4().hex[:8]}"
        os.system(f"psql -qh 127.0.0.1 -U postgres -c 'CREATE DATABASE {name}'")  # noqa: S605
        url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    else:
        url = f"sqlite:///{workdir / 'upwatch.db'}"
    settings = Settings(database_url=url, data_dir=workdir, aggregate_flush_seconds=0)
    elapsed = asyncio.run(fill(settings, args.monitors, args.checks, args.failure_every))
    if args.db == "postgresql":
        sizes = asyncio.run(postgresql_sizes(url))
        os.system(f"psql -qh 127.0.0.1 -U postgres -c 'DROP DATABASE {name} WITH (FORCE)'")  # noqa: S605
    else:
        sizes = sqlite_sizes(workdir / "upwatch.db")
    results_size, results_rows = sizes["check_results"]
    figures = {
        "db": args.db,
        "monitors": args.monitors,
        "checks": results_rows,
        "ingest_s": round(elapsed, 1),
        "bytes_per_check": round(results_size / results_rows, 1),
        "tables": {t: {"bytes": b, "rows": r} for t, (b, r) in sizes.items()},
        "counts_bytes_per_check": round(sum(sizes[t][0] for t in TABLES[1:]) / results_rows, 1),
    }
    print(json.dumps(figures))
    print(
        f"{results_rows} checks of {args.monitors} monitors on {args.db}: "
        f"{figures['bytes_per_check']} bytes per check in check_results with its key; "
        f"day, hour and histogram counts {figures['counts_bytes_per_check']} bytes per check"
    )


if __name__ == "__main__":
    main()
