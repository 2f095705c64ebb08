"""Day, hour and histogram counts held in memory and flushed by a rule that survives a crash.

With ``aggregate_flush_seconds`` > 0 a batch's transaction stores its results and one row of
``unflushed_batches`` (a new id and the results' keys), but no counts: once it commits, the
ingester hands the batch's counts to ``Aggregates``, which holds them per batch. Every few
seconds (and at shutdown) one transaction deletes the rows of the batches held
(``DELETE ... RETURNING id``) and adds the counts of exactly the batches it deleted.

The rule: **whoever deletes a batch's row counts the batch**, in the transaction that deletes
it. So counts are added once whatever fails:

- killed before the flush (kill -9), the rows stay; the next start deletes them and counts
  their results again from ``check_results`` (``recover``), in the same transaction;
- a flush that fails rolls back and keeps its counts in memory for the next one; a flush whose
  commit answer was lost finds its rows gone next time and drops those counts;
- several ingesters (PostgreSQL): each flush also claims rows older than a few intervals, so a
  dead peer's batches are counted by a live one; if the peer was only slow, its own delete
  returns nothing and it drops those counts.

With 0 the counts are written in the batch's transaction, as increments (``BatchRows``).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.ports import MaintenanceCalendar
from upwatch.engine.repository import (
    DAY_COUNTS,
    AggregateRepository,
    IngestRepository,
    StoredResult,
)
from upwatch.kit.db import Database, after_commit
from upwatch.kit.histogram import DayTotals
from upwatch.kit.ids import new_id
from upwatch.kit.progress import progress, stop_if_cancelled
from upwatch.models import HourlyCount
from upwatch.models.compact import epoch_ms, from_epoch_ms

# monitor id, region id, and the day ("2026-11-25") or hour ("2026-11-25T14") counted in
SpanKey = tuple[str, str, str]
# A stored result's key: monitor number, region number, epoch milliseconds.
ResultKey = tuple[int, int, int]

# As in unflushed_batches.result_keys: little-endian int32, int16, int64, no padding.
_KEY = struct.Struct("<ihq")
# Batches one recovery transaction claims: a kill leaves a flush interval's batches, a
# service stopped long with a long interval more; each transaction stays short.
_CLAIM = 50


def pack_keys(keys: Iterable[ResultKey]) -> bytes:
    return b"".join(_KEY.pack(*key) for key in keys)


def unpack_keys(data: bytes) -> list[ResultKey]:
    if len(data) % _KEY.size:
        raise ValueError(f"result keys of {len(data)} bytes are not {_KEY.size}-byte keys")
    return list(_KEY.iter_unpack(data))


@dataclass
class Counts:
    """Results counted per monitor, region and day (with the histogram) and hour."""

    days: dict[SpanKey, DayTotals] = field(default_factory=dict)
    hours: dict[SpanKey, dict[str, int]] = field(default_factory=dict)

    def add(
        self,
        monitor_id: str,
        region_id: str,
        checked_at: datetime,
        status: str,
        response_ms: float | None,
        in_window: bool,
    ) -> None:
        """Count one stored result in its monitor's day and hour."""
        moment = checked_at.astimezone(UTC)
        key = (monitor_id, region_id, moment.date().isoformat())
        day = self.days.get(key)
        if day is None:
            day = self.days[key] = DayTotals()
        day.total += 1
        setattr(day, status, getattr(day, status) + 1)
        hour_key = (monitor_id, region_id, HourlyCount.key_of(moment))
        hour = self.hours.get(hour_key)
        if hour is None:
            hour = self.hours[hour_key] = {"total": 0, "up": 0, "down": 0, "degraded": 0}
        hour["total"] += 1
        hour[status] += 1
        if in_window:
            day.maintenance_total += 1
            name = f"maintenance_{status}"
            setattr(day, name, getattr(day, name) + 1)
        if response_ms is not None:
            # As stored (whole microseconds), so a recount from the rows gives the same sums;
            # a value read back from a row is unchanged by this.
            stored_ms = round(response_ms * 1000) / 1000
            day.response_ms_sum += stored_ms
            day.response_count += 1
            day.histogram.add(stored_ms)

    def merge(self, other: Counts) -> None:
        """Add ``other``'s counts to these (``other`` is left as it was)."""
        for key, added in other.days.items():
            day = self.days.get(key)
            if day is None:
                day = self.days[key] = DayTotals()
            for name in DAY_COUNTS:
                setattr(day, name, getattr(day, name) + getattr(added, name))
            day.histogram.merge(added.histogram)
        for key, counts in other.hours.items():
            hour = self.hours.setdefault(key, {"total": 0, "up": 0, "down": 0, "degraded": 0})
            for name, count in counts.items():
                hour[name] += count

    def monitor_ids(self) -> set[str]:
        return {monitor_id for monitor_id, _, _ in self.days}

    def only(self, monitor_ids: Collection[str]) -> Counts:
        """These counts for ``monitor_ids`` alone."""
        return Counts(
            {k: v for k, v in self.days.items() if k[0] in monitor_ids},
            {k: v for k, v in self.hours.items() if k[0] in monitor_ids},
        )

    def day_rows(self) -> list[dict[str, object]]:
        return [
            {
                "monitor_id": monitor_id,
                "region_id": region_id,
                "day": day_key,
                "total": add.total,
                "up": add.up,
                "down": add.down,
                "degraded": add.degraded,
                "response_ms_sum": add.response_ms_sum,
                "response_count": add.response_count,
                "response_ms_min": (add.histogram.observed or (None, None))[0],
                "response_ms_max": (add.histogram.observed or (None, None))[1],
                "maintenance_total": add.maintenance_total,
                "maintenance_up": add.maintenance_up,
                "maintenance_down": add.maintenance_down,
                "maintenance_degraded": add.maintenance_degraded,
            }
            for (monitor_id, region_id, day_key), add in self.days.items()
        ]

    def hour_rows(self) -> list[dict[str, object]]:
        return [
            {"monitor_id": monitor_id, "region_id": region_id, "hour": hour_key, **counts}
            for (monitor_id, region_id, hour_key), counts in self.hours.items()
        ]

    def bucket_rows(self) -> list[dict[str, object]]:
        return [
            {
                "monitor_id": monitor_id,
                "region_id": region_id,
                "day": day_key,
                "bucket": bucket,
                "count": count,
            }
            for (monitor_id, region_id, day_key), add in self.days.items()
            for bucket, count in add.histogram.buckets()
        ]


async def add_counts(session: AsyncSession, counts: Counts) -> None:
    """Add ``counts`` to the stored day, hour and histogram rows (increments in SQL)."""
    repository = IngestRepository(session)
    await repository.add_days(counts.day_rows())
    await repository.add_hours(counts.hour_rows())
    await repository.add_buckets(counts.bucket_rows())


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(eq=False)
class Aggregates:
    """The counts of the batches this process stored and has not flushed yet."""

    db: Database
    maintenance: MaintenanceCalendar | None = None
    # 0: no deferral (counts in each batch's transaction); the flush loop is not run.
    flush_seconds: float = 0.0
    now: Callable[[], datetime] = _now
    # Counts of each batch stored and not flushed yet, by the batch's row id.
    held: dict[str, Counts] = field(default_factory=dict, init=False)
    flushed: int = field(default=0, init=False)  # batches counted from memory, since start
    recovered: int = field(default=0, init=False)  # batches counted again from stored rows

    @property
    def deferred(self) -> bool:
        return self.flush_seconds > 0

    @property
    def stale_seconds(self) -> float:
        """A batch row this old is taken as a dead process's. Several intervals, so a live
        peer flushes its own first; and at least a minute, for clocks that disagree a bit.
        Taken too early costs a recount, never a count: the rule keeps it exact."""
        return max(5 * self.flush_seconds, 60.0)

    async def journal(
        self, session: AsyncSession, keys: Sequence[ResultKey], counts: Counts
    ) -> None:
        """In a batch's transaction: record the batch's result keys, and hold its counts
        once the transaction commits (a rollback holds nothing)."""
        batch_id = new_id()
        await AggregateRepository(session).journal(batch_id, self.now(), pack_keys(keys))
        after_commit(session, lambda: self.hold(batch_id, counts))

    def hold(self, batch_id: str, counts: Counts) -> None:
        self.held[batch_id] = counts

    async def flush(self) -> None:
        """Add the counts of the batches held whose rows this transaction deletes, and those
        of rows a dead process left (recounted). On failure nothing is dropped: the held
        counts are kept for the next flush."""
        batch_ids = list(self.held)
        stale_before = self.now() - timedelta(seconds=self.stale_seconds)
        async with self.db.worksession() as session:
            repository = AggregateRepository(session)
            # Ours first: a row of ours old enough to look stale is counted from memory.
            claimed = await repository.claim(batch_ids)
            counts = Counts()
            for batch_id in sorted(claimed):
                counts.merge(self.held[batch_id])
            left = await repository.claim_older(stale_before, _CLAIM)
            counts.merge(await self._recount(session, left))
            if claimed or left:
                await self._add(session, counts)
                await session.commit()
        # Claimed by a peer meanwhile, the others were counted there: drop them all.
        for batch_id in batch_ids:
            self.held.pop(batch_id, None)
        self.flushed += len(claimed)
        self.recovered += len(left)

    async def recover(self, before: datetime | None = None) -> int:
        """Count again, from their stored results, the batches whose rows are still there
        (written before ``before``; all when None), a few batches per transaction. Returns
        how many batches were counted."""
        total = 0
        while True:
            async with self.db.worksession() as session:
                left = await AggregateRepository(session).claim_older(before, _CLAIM)
                if not left:
                    return total
                await self._add(session, await self._recount(session, left))
                await session.commit()
            total += len(left)
            self.recovered += len(left)

    async def _add(self, session: AsyncSession, counts: Counts) -> None:
        """Add ``counts``, leaving out monitors deleted since (their rows went with them)."""
        alive = await AggregateRepository(session).existing_monitors(counts.monitor_ids())
        await add_counts(session, counts.only(alive))

    async def _recount(self, session: AsyncSession, batches: Sequence[bytes]) -> Counts:
        """The counts of the stored results of ``batches`` (their packed keys), as the
        ingester counted them: status, response time as stored, maintenance windows."""
        repository = AggregateRepository(session)
        found: list[StoredResult] = []
        for packed in batches:
            keys = unpack_keys(packed)
            if not keys:
                continue
            wanted = set(keys)
            rows = await repository.stored_results(
                {m for m, _, _ in keys},
                from_epoch_ms(min(t for _, _, t in keys)),
                from_epoch_ms(max(t for _, _, t in keys)),
            )
            found += [
                row
                for row in rows
                if (row.monitor_number, row.region_number, epoch_ms(row.checked_at)) in wanted
            ]
        held = [False] * len(found)
        if self.maintenance is not None and found:
            held = await self.maintenance.in_maintenance(
                session, [(row.monitor_id, row.project_id, row.checked_at) for row in found]
            )
        counts = Counts()
        for row, in_window in zip(found, held, strict=True):
            counts.add(
                row.monitor_id,
                row.region_id,
                row.checked_at,
                row.status,
                row.response_time_ms,
                in_window,
            )
        return counts

    async def run(self) -> None:
        """Flush every ``flush_seconds``, and once more when stopped. A failed flush raises
        (the supervisor logs it and restarts the loop) with its counts still held."""
        try:
            while True:
                stop_if_cancelled()
                await asyncio.sleep(self.flush_seconds)
                # Shielded: a stop that lands mid-flush would leave the connection inside a
                # write transaction (SQLite stays locked until it is garbage-collected).
                await asyncio.shield(self.flush())
                progress()
        finally:
            # What is not flushed here (a batch committed after it, or a flush that fails)
            # is recounted from its rows at the next start.
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())
