"""Every SQL statement of the engine, on SQLite and PostgreSQL alike.

Region presence lives in the database: whoever receives a worker's heartbeats (the embedded
engine today, the ingester in distributed mode) writes the region's ``last_seen_at``, and
everyone (the scheduler, the API) reads who is online from there, never from a process's memory.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Integer,
    String,
    Table,
    any_,
    bindparam,
    case,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import undefer

from upwatch.kit.ids import new_id
from upwatch.models import (
    CheckResult,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Monitor,
    Region,
    UnflushedBatch,
)
from upwatch.models.keys import monitor_number, region_number

DAY_COUNTS = (
    "total",
    "up",
    "down",
    "degraded",
    "response_ms_sum",
    "response_count",
    "maintenance_total",
    "maintenance_up",
    "maintenance_down",
    "maintenance_degraded",
)


HOUR_COUNTS = ("total", "up", "down", "degraded")


def _extreme(table: Table, added: Any, lower: bool) -> ColumnElement[Any]:
    """The day's smallest (``lower``) or largest time after adding a batch. A day that had
    times but no range (stored before ranges were kept) stays without one: the batch's range
    is not the day's. Plain comparisons, not LEAST/GREATEST: PostgreSQL's skip NULLs, SQLite's
    MIN/MAX return NULL, and this has to mean the same on both."""
    name = "response_ms_min" if lower else "response_ms_max"
    stored, new = table.c[name], added[name]
    beyond = new < stored if lower else new > stored
    return case(
        (table.c.response_count == 0, new),
        (added.response_count == 0, stored),
        (stored.is_(None) | new.is_(None), None),
        (beyond, new),
        else_=stored,
    )


@dataclass(slots=True)
class LockedMonitor:
    """What the ingester reads of a monitor and writes back: plain values, no ORM object."""

    id: str
    number: int
    project_id: str
    name: str
    type: str
    url: str | None
    host: str | None
    port: int | None
    is_active: bool
    status: str
    state: dict[str, Any] | None
    last_checked_at: datetime | None
    recent_ms: list[float | None] | None
    retries: int
    degraded_threshold_ms: float | None
    quorum: int | None
    region_ids: list[str] | None
    success_threshold: int
    alert_on_degraded: int | None
    baseline_factor: float | None
    certificate_warning_days: list[int] | None


_MONITORS: Table = Monitor.__table__  # type: ignore[assignment]
_RESULTS: Table = CheckResult.__table__  # type: ignore[assignment]
_REGIONS: Table = Region.__table__  # type: ignore[assignment]
_LOCKED_COLUMNS = [_MONITORS.c[f.name] for f in fields(LockedMonitor)]


class IngestRepository:
    """What the ingester writes: results (once per key), and the day, hour and histogram
    counts as increments.

    The hot path uses statements of one fixed shape, run with many parameter sets
    (executemany): compiled once, cached by SQLAlchemy and prepared once by the driver. No
    ORM object is made and nothing is returned from an insert.
    """

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self._postgresql = session.get_bind().dialect.name == "postgresql"

    def _among(self, column: Any, values: Sequence[str]) -> ColumnElement[bool]:
        """``column IN values`` with one statement text whatever the number of values on
        PostgreSQL (``= ANY(array)``); SQLite prepares statements cheaply."""
        if self._postgresql:
            array = bindparam("values", list(values), type_=ARRAY(String))
            matches: ColumnElement[bool] = column == any_(array)
            return matches
        within: ColumnElement[bool] = column.in_(values)
        return within

    async def lock_monitors(self, monitor_ids: Collection[str]) -> dict[str, LockedMonitor]:
        """The batch's monitors, locked until commit: two ingesters never move one monitor's
        state from the same starting point. PostgreSQL locks the rows (in id order, so two
        batches cannot deadlock on them); on SQLite the transaction holds the single writer lock
        from its start."""
        ids = sorted(monitor_ids)
        query = select(*_LOCKED_COLUMNS).where(self._among(_MONITORS.c.id, ids))
        if self._postgresql:
            query = query.order_by(_MONITORS.c.id).with_for_update()
        # SQLite: the session is a writer's (``Database.worksession``), whose transaction
        # began with the write lock (BEGIN IMMEDIATE).
        rows = (await self.session.execute(query)).all()
        return {row.id: LockedMonitor(*row) for row in rows}

    async def stored_keys(
        self, monitor_numbers: Sequence[int], first: datetime, last: datetime
    ) -> set[tuple[int, int, datetime]]:
        """The keys (monitor number, region number, time) stored already among the batch's
        monitors and times (a batch retried, a report redelivered). Exact while the batch
        holds its monitors' locks: a report's copies all wait for the lock of its one
        monitor. One statement shape: the monitors, and the batch's span of time."""
        numbers = sorted(set(monitor_numbers))
        monitor = _RESULTS.c.monitor_number
        among: ColumnElement[bool]
        if self._postgresql:
            among = monitor == any_(bindparam("numbers", numbers, type_=ARRAY(Integer)))
        else:
            among = monitor.in_(numbers)
        at = _RESULTS.c.checked_at_ms
        query = select(monitor, _RESULTS.c.region_number, at).where(
            among,
            at >= bindparam("first", first, type_=at.type),
            at <= bindparam("last", last, type_=at.type),
        )
        rows = await self.session.execute(query)
        return {(m, r, t) for m, r, t in rows.all()}

    async def region_numbers(self) -> dict[str, int]:
        """Every region's number by its id (regions are few and never deleted)."""
        rows = await self.session.execute(select(_REGIONS.c.id, _REGIONS.c.number))
        return dict(rows.all())

    async def _run(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run the hot-path statement ``name`` once for every row (executemany) on the
        session's connection: the statement is built once per dialect, so neither its cache
        key nor the ORM's bulk-insert path is paid again per batch."""
        if rows:
            connection = await self.session.connection()
            await connection.execute(_statement(name, self._postgresql), list(rows))

    async def insert_results(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert results that are not stored yet (``stored_keys``)."""
        await self._run("results", rows)

    async def save_monitors(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Write back each monitor's status, state, last check and recent response times
        (keys ``m_id``, ``m_status``, ``m_state``, ``m_checked``, ``m_recent``): one
        statement for the batch."""
        await self._run("monitors", rows)

    async def add_days(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Add day counts to the stored ones: ``value = value + excluded.value`` in SQL, and
        the lesser or greater of the smallest and largest time, so the order and number of
        writers does not matter. Sorted: concurrent writers take the rows' locks in one
        order (no deadlock)."""
        await self._run(
            "days", sorted(rows, key=lambda r: (r["monitor_id"], r["region_id"], r["day"]))
        )

    async def add_hours(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Add hour counts (monitor, region, hour, total, up, down, degraded) the same way."""
        await self._run(
            "hours", sorted(rows, key=lambda r: (r["monitor_id"], r["region_id"], r["hour"]))
        )

    async def add_buckets(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Add histogram bucket counts (monitor, region, day, bucket, count) the same way."""
        await self._run(
            "buckets",
            sorted(rows, key=lambda r: (r["monitor_id"], r["region_id"], r["day"], r["bucket"])),
        )


_STATEMENTS: dict[tuple[str, bool], Any] = {}


def _statement(name: str, postgresql: bool) -> Any:
    """The ingester's statement ``name`` for one dialect, built on first use."""
    key = (name, postgresql)
    statement = _STATEMENTS.get(key)
    if statement is None:
        statement = _STATEMENTS[key] = _build(name, postgresql)
    return statement


def _build(name: str, postgresql: bool) -> Any:
    dialect_insert = pg_insert if postgresql else sqlite_insert
    if name == "results":
        return insert(_RESULTS)
    if name == "monitors":
        return (
            update(_MONITORS)
            .where(_MONITORS.c.id == bindparam("m_id"))
            .values(
                status=bindparam("m_status"),
                state=bindparam("m_state", type_=_MONITORS.c.state.type),
                last_checked_at=bindparam("m_checked", type_=_MONITORS.c.last_checked_at.type),
                recent_ms=bindparam("m_recent", type_=_MONITORS.c.recent_ms.type),
            )
        )
    if name == "days":
        days: Table = DailyAggregate.__table__  # type: ignore[assignment]
        upsert = dialect_insert(days)
        return upsert.on_conflict_do_update(
            index_elements=["monitor_id", "region_id", "day"],
            set_={
                **{c: days.c[c] + upsert.excluded[c] for c in DAY_COUNTS},
                "response_ms_min": _extreme(days, upsert.excluded, lower=True),
                "response_ms_max": _extreme(days, upsert.excluded, lower=False),
            },
        )
    if name == "hours":
        hours: Table = HourlyCount.__table__  # type: ignore[assignment]
        upsert = dialect_insert(hours)
        return upsert.on_conflict_do_update(
            index_elements=["monitor_id", "region_id", "hour"],
            set_={c: hours.c[c] + upsert.excluded[c] for c in HOUR_COUNTS},
        )
    assert name == "buckets"
    buckets: Table = HistogramBucket.__table__  # type: ignore[assignment]
    upsert = dialect_insert(buckets)
    return upsert.on_conflict_do_update(
        index_elements=["monitor_id", "region_id", "day", "bucket"],
        set_={"count": buckets.c.count + upsert.excluded.count},
    )


@dataclass(frozen=True, slots=True)
class StoredResult:
    """What a recount reads of a stored result: its key, its figures, and the ids it counts
    under (the monitor's project for maintenance windows)."""

    monitor_number: int
    region_number: int
    checked_at: datetime
    status: str
    response_time_ms: float | None
    monitor_id: str
    project_id: str
    region_id: str


class AggregateRepository:
    """The journal of batches whose counts are held in an ingester's memory
    (``unflushed_batches``, ``engine/aggregates.py``), and what a recount reads.

    A batch's row is claimed by deleting it (``DELETE ... RETURNING``): the database lets one
    transaction delete a row, so whoever gets it back counts the batch, and no one else."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self._postgresql = session.get_bind().dialect.name == "postgresql"

    async def journal(self, batch_id: str, created_at: datetime, result_keys: bytes) -> None:
        await self.session.execute(
            insert(UnflushedBatch).values(
                id=batch_id, created_at=created_at, result_keys=result_keys
            )
        )

    async def claim(self, batch_ids: Sequence[str]) -> set[str]:
        """Delete the rows of ``batch_ids``; the ids this transaction deleted (a batch a
        peer recovered meanwhile is not among them)."""
        claimed: set[str] = set()
        ids = sorted(batch_ids)
        for start in range(0, len(ids), 500):  # bounded bind parameters per statement
            rows = await self.session.execute(
                delete(UnflushedBatch)
                .where(UnflushedBatch.id.in_(ids[start : start + 500]))
                .returning(UnflushedBatch.id)
            )
            claimed.update(rows.scalars().all())
        return claimed

    async def claim_older(self, before: datetime | None, limit: int) -> list[bytes]:
        """Delete up to ``limit`` rows written before ``before`` (any, when None), oldest
        first; their result keys."""
        oldest = select(UnflushedBatch.id).order_by(UnflushedBatch.created_at).limit(limit)
        if before is not None:
            oldest = oldest.where(UnflushedBatch.created_at < before)
        rows = await self.session.execute(
            delete(UnflushedBatch)
            .where(UnflushedBatch.id.in_(oldest.scalar_subquery()))
            .returning(UnflushedBatch.result_keys)
        )
        return list(rows.scalars().all())

    async def existing_monitors(self, monitor_ids: Collection[str]) -> set[str]:
        """Which of ``monitor_ids`` still exist; on PostgreSQL held until commit (``FOR KEY
        SHARE``, in id order), so none is deleted under the counts added for it."""
        ids = sorted(monitor_ids)
        found: set[str] = set()
        for start in range(0, len(ids), 5000):
            query = select(Monitor.id).where(Monitor.id.in_(ids[start : start + 5000]))
            if self._postgresql:
                query = query.order_by(Monitor.id).with_for_update(key_share=True)
            found.update((await self.session.scalars(query)).all())
        return found

    async def stored_results(
        self, monitor_numbers: Collection[int], first: datetime, last: datetime
    ) -> list[StoredResult]:
        """The stored results of ``monitor_numbers`` checked from ``first`` to ``last``
        (inclusive), with their monitor's, project's and region's ids."""
        query = (
            select(
                CheckResult.monitor_number,
                CheckResult.region_number,
                CheckResult.checked_at,
                CheckResult.status,
                CheckResult.response_time_ms,
                Monitor.id,
                Monitor.project_id,
                Region.id,
            )
            .join(Monitor, Monitor.number == CheckResult.monitor_number)
            .join(Region, Region.number == CheckResult.region_number)
            .where(
                CheckResult.monitor_number.in_(sorted(monitor_numbers)),
                CheckResult.checked_at >= first,
                CheckResult.checked_at <= last,
            )
        )
        return [StoredResult(*row) for row in (await self.session.execute(query)).all()]


class EngineRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def ensure_region(self, code: str, name: str, now: datetime) -> str:
        """The id of the built-in region ``code``, created on first start."""
        region = await self.session.scalar(select(Region).where(Region.code == code))
        if region is None:
            region = Region(id=new_id(), code=code, name=name, builtin=True, created_at=now)
            self.session.add(region)
            await self.session.flush()
        return region.id

    async def report_alive(self, workers: Mapping[str, int], now: datetime) -> None:
        """Regions seen now, with how many workers beat in each (one statement per count)."""
        by_count: dict[int, list[str]] = {}
        for region_id, count in workers.items():
            by_count.setdefault(count, []).append(region_id)
        for count, region_ids in sorted(by_count.items()):
            await self.session.execute(
                update(Region)
                .where(Region.id.in_(sorted(region_ids)))
                .values(last_seen_at=now, workers=count)
            )

    async def region_ids_by_code(self) -> dict[str, str]:
        rows = await self.session.execute(select(Region.code, Region.id))
        return dict(rows.tuples().all())

    async def online_region_ids(self, now: datetime, online_seconds: float) -> tuple[str, ...]:
        rows = await self.session.scalars(
            select(Region.id).where(Region.last_seen_at >= now - timedelta(seconds=online_seconds))
        )
        return tuple(sorted(rows.all()))

    async def result(self, monitor_id: str, region_id: str, since: datetime) -> CheckResult | None:
        """The newest result of ``monitor_id`` from ``region_id`` checked at ``since`` or
        later, with its monitor's and region's ids."""
        found: CheckResult | None = await self.session.scalar(
            select(CheckResult)
            .options(undefer(CheckResult.monitor_id), undefer(CheckResult.region_id))
            .where(
                CheckResult.monitor_number == monitor_number(monitor_id),
                CheckResult.region_number == region_number(region_id),
                CheckResult.checked_at >= since,
            )
            .order_by(CheckResult.checked_at.desc())
            .limit(1)
        )
        return found

    async def active_monitors(self) -> Sequence[Monitor]:
        return (await self.session.scalars(select(Monitor).where(Monitor.is_active))).all()

    async def monitors(self, monitor_ids: Collection[str]) -> Sequence[Monitor]:
        return (
            await self.session.scalars(select(Monitor).where(Monitor.id.in_(monitor_ids)))
        ).all()

    async def last_checks(self, monitor_ids: Collection[str]) -> dict[str, datetime | None]:
        """The last check time of each of ``monitor_ids`` that exists and is active."""
        ids = sorted(monitor_ids)
        found: dict[str, datetime | None] = {}
        for start in range(0, len(ids), 5000):  # bounded bind parameters per statement
            rows = await self.session.execute(
                select(Monitor.id, Monitor.last_checked_at).where(
                    Monitor.id.in_(ids[start : start + 5000]), Monitor.is_active
                )
            )
            found.update(rows.tuples().all())
        return found
