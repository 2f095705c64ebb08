"""The baseline rule: a monitor is slow when the p95 response time of its last hour is above
``baseline_factor`` times its own p95 over the last seven days.

Computed once a minute by a supervised loop, off the per-check path: the week's p95 from the
stored daily histograms (``daily_histogram_buckets``, the seven UTC days up to today, every
region), the hour's from the hour's stored results (bounded by the check interval). Both count
every result with a response time, like the histograms. Each window needs at least
``baseline_min_samples`` (default 30) values, or there is no verdict.

The verdict, a sentence saying why, or none, is written to ``monitors.state`` (key
``baseline``) under the monitor's row lock, the lock the ingester takes, and only when it
changed. The status machine reads it from the next check on: an up monitor with a verdict is
DEGRADED (``engine/status.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.histogram import Histogram
from upwatch.kit.progress import progress
from upwatch.models import CheckResult, HistogramBucket, Monitor

log = logging.getLogger(__name__)

DEFAULT_MIN_SAMPLES = 30
PERCENTILE = 0.95
WEEK_DAYS = 7
CHUNK = 500  # monitors per statement: bounded bind parameters


@dataclass(frozen=True, slots=True)
class Window:
    """One window's p95 and how many values it is computed from."""

    p95: float | None
    samples: int

    @classmethod
    def of(cls, histogram: Histogram) -> Window:
        return cls(histogram.quantile(PERCENTILE), histogram.count)


def baseline_verdict(
    hour: Window, week: Window, factor: float | None, min_samples: int | None = None
) -> str | None:
    """Why the monitor is slow against its own baseline, or None when it is not (or when
    either window has too few values to say)."""
    if factor is None or factor <= 0:
        return None
    needed = max(min_samples if min_samples is not None else DEFAULT_MIN_SAMPLES, 1)
    if hour.samples < needed or week.samples < needed:
        return None
    if hour.p95 is None or week.p95 is None or hour.p95 <= factor * week.p95:
        return None
    return (
        f"p95 of the last hour ({hour.p95:.0f} ms) is above {factor:g} x "
        f"the 7-day p95 ({week.p95:.0f} ms)"
    )


@dataclass(frozen=True, slots=True)
class OptedIn:
    id: str
    factor: float
    min_samples: int | None


async def opted_in(session: AsyncSession) -> list[OptedIn]:
    rows = await session.execute(
        select(Monitor.id, Monitor.baseline_factor, Monitor.baseline_min_samples)
        .where(Monitor.is_active, Monitor.baseline_factor.is_not(None))
        .order_by(Monitor.id)
    )
    return [OptedIn(id_, factor, samples) for id_, factor, samples in rows if factor is not None]


async def hour_windows(
    session: AsyncSession, monitor_ids: Sequence[str], now: datetime
) -> dict[str, Window]:
    """Each monitor's p95 over the hour before ``now``, from its stored results."""
    histograms: dict[str, Histogram] = {m: Histogram() for m in monitor_ids}
    rows = await session.execute(
        select(Monitor.id, CheckResult.response_time_ms)
        .join(Monitor, Monitor.number == CheckResult.monitor_number)
        .where(
            Monitor.id.in_(monitor_ids),
            CheckResult.checked_at > now - timedelta(hours=1),
            CheckResult.checked_at <= now,
            CheckResult.response_time_ms.is_not(None),
        )
    )
    for monitor_id, ms in rows:
        if ms is not None:
            histograms[monitor_id].add(ms)
    return {m: Window.of(h) for m, h in histograms.items()}


async def week_windows(
    session: AsyncSession, monitor_ids: Sequence[str], now: datetime
) -> dict[str, Window]:
    """Each monitor's p95 over the seven UTC days up to today, from the day histograms."""
    first = (now.date() - timedelta(days=WEEK_DAYS - 1)).isoformat()
    rows = await session.execute(
        select(HistogramBucket.monitor_id, HistogramBucket.bucket, func.sum(HistogramBucket.count))
        .where(HistogramBucket.monitor_id.in_(monitor_ids), HistogramBucket.day >= first)
        .group_by(HistogramBucket.monitor_id, HistogramBucket.bucket)
    )
    buckets: dict[str, list[tuple[int, int]]] = {m: [] for m in monitor_ids}
    for monitor_id, bucket, count in rows:
        buckets[monitor_id].append((bucket, int(count or 0)))
    return {m: Window.of(Histogram.from_buckets(b)) for m, b in buckets.items()}


async def store_verdicts(session: AsyncSession, verdicts: Mapping[str, str | None]) -> int:
    """Write each verdict that changed into its monitor's state, under the row lock the
    ingester takes (so neither overwrites the other's change); how many changed."""
    ids = sorted(verdicts)
    query = select(Monitor.id, Monitor.state).where(Monitor.id.in_(ids)).order_by(Monitor.id)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    changed = 0
    for monitor_id, state in await session.execute(query):
        verdict = verdicts[monitor_id]
        if (state or {}).get("baseline") == verdict:
            continue
        await session.execute(
            update(Monitor)
            .where(Monitor.id == monitor_id)
            .values(state={**(state or {}), "baseline": verdict})
        )
        changed += 1
        log.info("monitor %s baseline verdict: %s", monitor_id, verdict or "not slow")
    return changed


@dataclass(eq=False)
class BaselineLoop:
    """Every ``period_seconds``, the baseline verdict of every opted-in monitor."""

    db: Database
    clock: Clock
    period_seconds: float = 60.0

    async def run(self) -> None:
        while True:
            await self.run_once()
            progress()
            await asyncio.sleep(self.period_seconds)

    async def run_once(self) -> dict[str, str | None]:
        """One pass; the verdicts it reached, by monitor id."""
        now = self.clock.now()
        verdicts: dict[str, str | None] = {}
        async with self.db.workreader() as session:
            monitors = await opted_in(session)
            for start in range(0, len(monitors), CHUNK):
                chunk = monitors[start : start + CHUNK]
                ids = [m.id for m in chunk]
                hours = await hour_windows(session, ids, now)
                weeks = await week_windows(session, ids, now)
                for m in chunk:
                    verdicts[m.id] = baseline_verdict(
                        hours[m.id], weeks[m.id], m.factor, m.min_samples
                    )
        for start in range(0, len(verdicts), CHUNK):
            chunk_ids = sorted(verdicts)[start : start + CHUNK]
            async with self.db.worksession() as session:
                await store_verdicts(session, {m: verdicts[m] for m in chunk_ids})
                await session.commit()
        return verdicts
