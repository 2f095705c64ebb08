"""Counts held in memory and flushed by the rule "whoever deletes a batch's row counts it":
unit tests of the tally, the flush and recovery on a real database, and a property test that
crashes at random points and compares every aggregate with a count over the stored results."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tests.conftest import eventually
from tests.engine.conftest import DAY, REGION
from upwatch.engine.aggregates import Aggregates, Counts, pack_keys, unpack_keys
from upwatch.engine.broker import CheckReport, MemoryBroker
from upwatch.engine.ingester import Ingester
from upwatch.kit.db import Database
from upwatch.kit.histogram import bucket_of
from upwatch.models import (
    CheckResult,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Monitor,
    Region,
    UnflushedBatch,
)
from upwatch.models.compact import epoch_ms
from upwatch.probes.outcome import ErrorKind, Outcome

AT = datetime(2026, 11, 25, 14, 3, tzinfo=UTC)


class Crash(Exception):
    """The process dies here: what the transaction did is rolled back."""


class EveryThirdMillisecond:
    """A maintenance calendar: a check made in a millisecond divisible by three is in a
    window (the same answer for the ingester and for a recount)."""

    async def in_maintenance(
        self, session: AsyncSession, checks: Sequence[tuple[str, str, datetime]]
    ) -> list[bool]:
        return [epoch_ms(at) % 3 == 0 for _, _, at in checks]


class Breakable(Aggregates):
    """Aggregates whose transactions can be made to fail after all their writes."""

    fail_journal = False  # the batch's transaction dies before its commit
    fail_add = False  # a flush's or a recovery's transaction dies before its commit

    async def journal(self, session: AsyncSession, keys: Any, counts: Counts) -> None:
        await super().journal(session, keys, counts)
        if self.fail_journal:
            raise Crash("killed before the batch committed")

    async def _add(self, session: AsyncSession, counts: Counts) -> None:
        await super()._add(session, counts)
        if self.fail_add:
            raise Crash("killed before the flush committed")


# The tally


def test_result_keys_pack_into_fourteen_bytes_each_and_back() -> None:
    keys = [(1, 1, 0), (2_147_483_647, -32768, epoch_ms(AT)), (7, 3, -1)]
    packed = pack_keys(keys)
    assert len(packed) == 14 * len(keys)
    assert packed[:14] == bytes([1, 0, 0, 0, 1, 0]) + bytes(8)  # little-endian, no padding
    assert unpack_keys(packed) == keys
    assert unpack_keys(b"") == []


def test_result_keys_of_a_torn_length_are_refused() -> None:
    with pytest.raises(ValueError, match="14-byte keys"):
        unpack_keys(bytes(15))


def test_a_result_counts_in_its_day_and_hour_with_its_stored_time() -> None:
    counts = Counts()
    counts.add("m", "r", AT, "up", 12.3456789, in_window=False)
    counts.add("m", "r", AT + timedelta(hours=1), "degraded", 900.0, in_window=True)
    counts.add("m", "r", AT, "down", None, in_window=False)
    (day,) = counts.days.values()
    assert (day.total, day.up, day.down, day.degraded) == (3, 1, 1, 1)
    assert (day.maintenance_total, day.maintenance_degraded) == (1, 1)
    assert day.response_count == 2
    assert day.response_ms_sum == pytest.approx(12.346 + 900.0)  # as stored: microseconds
    assert day.histogram.observed == (12.346, 900.0)
    assert counts.hours == {
        ("m", "r", "2026-11-25T14"): {"total": 2, "up": 1, "down": 1, "degraded": 0},
        ("m", "r", "2026-11-25T15"): {"total": 1, "up": 0, "down": 0, "degraded": 1},
    }


def test_merged_counts_equal_the_counts_of_all_results_at_once_and_leave_the_parts() -> None:
    results = [
        ("m1", "r", AT + timedelta(minutes=n * 37), ("up", "down", "degraded")[n % 3], n * 7.5)
        for n in range(40)
    ]
    whole, first, second = Counts(), Counts(), Counts()
    for n, (monitor, region, at, status, ms) in enumerate(results):
        whole.add(monitor, region, at, status, ms, in_window=n % 4 == 0)
        (first if n % 2 else second).add(monitor, region, at, status, ms, in_window=n % 4 == 0)
    before = first.day_rows()
    merged = Counts()
    merged.merge(first)
    merged.merge(second)
    assert first.day_rows() == before

    def rows(counts: Counts) -> list[list[str]]:
        return [
            sorted(map(repr, made()))
            for made in (counts.day_rows, counts.hour_rows, counts.bucket_rows)
        ]

    assert rows(merged) == rows(whole)


def test_counts_for_some_monitors_leave_the_others_out() -> None:
    counts = Counts()
    counts.add("kept", "r", AT, "up", 1.0, in_window=False)
    counts.add("gone", "r", AT, "up", 1.0, in_window=False)
    kept = counts.only({"kept"})
    assert kept.monitor_ids() == {"kept"}
    assert [row["hour"] for row in kept.hour_rows()] == ["2026-11-25T14"]


# On a real database


def deferred(db: Database) -> Ingester:
    ingester = Ingester(
        db,
        MemoryBroker(),
        lambda: (REGION,),
        maintenance=EveryThirdMillisecond(),
        aggregate_flush_seconds=10.0,
    )
    ingester.aggregates = Breakable(db, EveryThirdMillisecond(), 10.0)
    return ingester


def check(
    monitor_id: str, offset_ms: int, ok: bool = True, response_us: int = 50_000
) -> CheckReport:
    at = DAY - timedelta(milliseconds=offset_ms)
    if ok:
        outcome = Outcome(ok=True, response_time_ms=response_us / 1000, status_code=200)
    else:
        outcome = Outcome(
            ok=False, response_time_ms=None, error_kind=ErrorKind.CONNECT, error="refused"
        )
    return CheckReport(monitor_id, REGION, at.timestamp(), at.timestamp(), at, outcome)


async def journal_rows(db: Database) -> int:
    async with db.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(UnflushedBatch)) or 0)


async def stored_aggregates(db: Database) -> dict[str, Any]:
    """Every aggregate row, by its key."""
    async with db.sessionmaker() as session:
        days = {
            (row.monitor_id, row.region_id, row.day): row
            for row in (await session.scalars(select(DailyAggregate))).all()
        }
        hours = {
            (row.monitor_id, row.region_id, row.hour): (row.total, row.up, row.down, row.degraded)
            for row in (await session.scalars(select(HourlyCount))).all()
        }
        buckets = {
            (row.monitor_id, row.region_id, row.day, row.bucket): row.count
            for row in (await session.scalars(select(HistogramBucket))).all()
        }
    return {
        "days": {
            key: (
                d.total,
                d.up,
                d.down,
                d.degraded,
                d.response_count,
                d.response_ms_min,
                d.response_ms_max,
                d.maintenance_total,
                d.maintenance_up,
                d.maintenance_down,
                d.maintenance_degraded,
            )
            for key, d in days.items()
        },
        "sums": {key: d.response_ms_sum for key, d in days.items()},
        "hours": hours,
        "buckets": buckets,
    }


async def brute_force(db: Database) -> dict[str, Any]:
    """The aggregates counted from scratch over every stored result, with no engine code."""
    async with db.sessionmaker() as session:
        rows = (
            await session.execute(
                select(
                    Monitor.id,
                    Region.id,
                    CheckResult.checked_at,
                    CheckResult.status,
                    CheckResult.response_time_ms,
                )
                .join(Monitor, Monitor.number == CheckResult.monitor_number)
                .join(Region, Region.number == CheckResult.region_number)
            )
        ).all()
    days: dict[tuple[str, str, str], list[Any]] = {}
    sums: dict[tuple[str, str, str], float] = {}
    hours: dict[tuple[str, str, str], list[int]] = {}
    buckets: dict[tuple[str, str, str, int], int] = {}
    statuses = ("up", "down", "degraded")
    for monitor_id, region_id, at, status, ms in rows:
        day_key = (monitor_id, region_id, at.strftime("%Y-%m-%d"))
        day = days.setdefault(day_key, [0, 0, 0, 0, 0, None, None, 0, 0, 0, 0])
        held = epoch_ms(at) % 3 == 0
        day[0] += 1
        day[1 + statuses.index(status)] += 1
        if held:
            day[7] += 1
            day[8 + statuses.index(status)] += 1
        if ms is not None:
            day[4] += 1
            day[5] = ms if day[5] is None else min(day[5], ms)
            day[6] = ms if day[6] is None else max(day[6], ms)
            sums[day_key] = sums.get(day_key, 0.0) + ms
            bucket = (*day_key, bucket_of(ms))
            buckets[bucket] = buckets.get(bucket, 0) + 1
        hour = hours.setdefault((monitor_id, region_id, at.strftime("%Y-%m-%dT%H")), [0] * 4)
        hour[0] += 1
        hour[1 + statuses.index(status)] += 1
    return {
        "days": {key: tuple(value) for key, value in days.items()},
        "sums": {key: sums.get(key, 0.0) for key in days},
        "hours": {key: tuple(value) for key, value in hours.items()},
        "buckets": buckets,
    }


async def assert_exact(db: Database) -> None:
    stored, counted = await stored_aggregates(db), await brute_force(db)
    assert stored["days"] == counted["days"]
    assert stored["hours"] == counted["hours"]
    assert stored["buckets"] == counted["buckets"]
    for key, total in counted["sums"].items():  # float sums added in another order
        assert math.isclose(stored["sums"][key], total, rel_tol=1e-9, abs_tol=1e-9), key


async def test_a_deferred_batch_stores_its_results_and_journal_row_and_counts_at_the_flush(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = deferred(db)
    reports = [check(monitor_ids[n % 3], n * 1000, ok=n % 4 != 0) for n in range(12)]
    assert len(await ingester.ingest(reports)) == 12
    assert await journal_rows(db) == 1
    assert len(ingester.aggregates.held) == 1
    assert (await stored_aggregates(db))["days"] == {}

    await ingester.aggregates.flush()
    assert await journal_rows(db) == 0
    assert ingester.aggregates.held == {}
    assert ingester.aggregates.flushed == 1
    await assert_exact(db)


async def test_counts_written_with_each_batch_when_the_flush_is_off(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,), maintenance=EveryThirdMillisecond())
    await ingester.ingest([check(monitor_ids[n % 3], n * 997) for n in range(9)])
    assert await journal_rows(db) == 0
    assert ingester.aggregates.held == {}
    await assert_exact(db)


async def test_a_flush_that_fails_keeps_its_counts_for_the_next(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = deferred(db)
    aggregates = ingester.aggregates
    assert isinstance(aggregates, Breakable)
    await ingester.ingest([check(monitor_ids[0], n * 1000) for n in range(5)])
    aggregates.fail_add = True
    with pytest.raises(Crash):
        await aggregates.flush()
    assert len(aggregates.held) == 1
    assert await journal_rows(db) == 1
    assert (await stored_aggregates(db))["days"] == {}

    aggregates.fail_add = False
    await aggregates.flush()
    assert await journal_rows(db) == 0
    await assert_exact(db)


async def test_a_batch_a_peer_recovered_is_dropped_by_its_own_flush_not_counted_twice(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = deferred(db)
    await ingester.ingest([check(monitor_ids[1], n * 1000) for n in range(6)])
    peer = Aggregates(db, EveryThirdMillisecond(), 10.0)
    assert await peer.recover() == 1  # took our batch for a dead process's

    await ingester.aggregates.flush()
    assert ingester.aggregates.held == {}
    assert ingester.aggregates.flushed == 0
    await assert_exact(db)


async def test_a_flush_counts_stale_rows_a_dead_process_left_beside_its_own(
    db: Database, monitor_ids: list[str]
) -> None:
    dead = deferred(db)
    dead.aggregates.now = lambda: datetime.now(UTC) - timedelta(minutes=5)
    await dead.ingest([check(monitor_ids[0], n * 1000) for n in range(4)])
    alive = deferred(db)
    await alive.ingest([check(monitor_ids[2], n * 1000) for n in range(3)])

    await alive.aggregates.flush()
    assert (alive.aggregates.flushed, alive.aggregates.recovered) == (1, 1)
    assert await journal_rows(db) == 0
    await assert_exact(db)


async def test_a_flush_leaves_out_monitors_deleted_since_their_batch(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = deferred(db)
    await ingester.ingest([check(m, n * 1000) for n, m in enumerate(monitor_ids * 2)])
    async with db.sessionmaker() as session:
        await session.execute(delete(Monitor).where(Monitor.id == monitor_ids[0]))
        await session.commit()

    await ingester.aggregates.flush()
    assert await journal_rows(db) == 0
    counted = {key[0] for key in (await stored_aggregates(db))["days"]}
    assert counted == set(monitor_ids[1:])
    await assert_exact(db)


async def test_the_ingester_counts_a_killed_process_batches_again_when_it_starts(
    db: Database, monitor_ids: list[str]
) -> None:
    killed = deferred(db)
    await killed.ingest([check(monitor_ids[n % 3], n * 1000, ok=n % 3 != 0) for n in range(20)])
    await killed.ingest([check(monitor_ids[0], 50_000 + n * 1000) for n in range(5)])
    assert await journal_rows(db) == 2  # and the process dies with its counts

    started = deferred(db)
    started.broker = broker = MemoryBroker()
    await broker.publish_result(check(monitor_ids[1], 90_000))
    task = asyncio.create_task(started.run())
    try:
        await eventually(lambda: started.written == 1)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert started.aggregates.recovered == 2
    await started.aggregates.flush()
    await assert_exact(db)


# Random crashes


STEPS = ("flush", "failing_flush", "lost_flush_answer", "crash", "lost_hold", "peer_recovers")
STEPS += ("redeliver", "failing_recovery")
results = st.tuples(
    st.integers(0, 2),  # which monitor
    st.booleans(),  # ok
    st.integers(0, 900_000),  # response time, microseconds (above 300 ms: degraded on one)
    st.integers(0, 3 * 24 * 3600 * 1000),  # how long before DAY, milliseconds
)
batches = st.lists(results, min_size=1, max_size=8)
steps = st.lists(
    st.one_of(batches, st.sampled_from(STEPS), st.tuples(st.just("failing_batch"), batches)),
    max_size=12,
)


async def _empty(db: Database) -> None:
    async with db.sessionmaker() as session:
        for model in (CheckResult, UnflushedBatch, DailyAggregate, HourlyCount, HistogramBucket):
            await session.execute(delete(model))
        await session.commit()


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps)
async def test_aggregates_equal_a_recount_whatever_crashes_between_the_writes(
    db: Database, monitor_ids: list[str], plan: list[Any]
) -> None:
    await _empty(db)
    async with db.sessionmaker() as session:
        slow = await session.get(Monitor, monitor_ids[2])
        assert slow is not None
        slow.degraded_threshold_ms = 300.0
        await session.commit()
    ingester = deferred(db)
    sent: list[list[CheckReport]] = []

    def aggregates() -> Breakable:
        assert isinstance(ingester.aggregates, Breakable)
        return ingester.aggregates

    for step in plan:
        # A step that fails is a crash at that point when it had something to write (a
        # transaction with nothing to do does not reach the failing write).
        if isinstance(step, list):
            batch = [check(monitor_ids[m], back, ok, us) for m, ok, us, back in step]
            sent.append(batch)
            await ingester.ingest(batch)
        elif isinstance(step, tuple):
            batch = [check(monitor_ids[m], back, ok, us) for m, ok, us, back in step[1]]
            sent.append(batch)  # a later "redeliver" is the retry that stores it
            aggregates().fail_journal = True
            with contextlib.suppress(Crash):
                await ingester.ingest(batch)
            aggregates().fail_journal = False
        elif step == "redeliver" and sent:
            await ingester.ingest(sent[-1])
        elif step == "flush":
            await aggregates().flush()
        elif step == "failing_flush":
            aggregates().fail_add = True
            with contextlib.suppress(Crash):
                await aggregates().flush()
            aggregates().fail_add = False
        elif step == "lost_flush_answer":
            # Committed, but the answer never came: the counts are still held.
            held = dict(aggregates().held)
            await aggregates().flush()
            aggregates().held.update(held)
        elif step == "lost_hold" and aggregates().held:
            # Killed between the batch's commit and the hand-over of its counts.
            aggregates().held.pop(list(aggregates().held)[-1])
        elif step == "crash":
            # kill -9 and a new start: the memory is gone, the journal is read again.
            ingester.aggregates = Breakable(db, EveryThirdMillisecond(), 10.0)
            await ingester.aggregates.recover()
        elif step == "failing_recovery":
            ingester.aggregates = Breakable(db, EveryThirdMillisecond(), 10.0)
            aggregates().fail_add = True
            with contextlib.suppress(Crash):
                await aggregates().recover()
            aggregates().fail_add = False
        elif step == "peer_recovers":
            await Aggregates(db, EveryThirdMillisecond(), 10.0).recover()

    await aggregates().flush()
    await aggregates().recover()  # what a stop left: the next start's work
    assert aggregates().held == {}
    assert await journal_rows(db) == 0
    await assert_exact(db)
