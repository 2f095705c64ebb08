"""SLA figures of a period, as pure functions of day counts, histogram buckets, incidents and
maintenance time.

Uptime is counted by checks, like every other uptime figure: degraded checks count as up, and
checks made during a maintenance window are left out. Time figures (downtime, error budget)
apply that uptime to the period's minutes outside maintenance. Apdex follows the Apdex
standard over the response-time histograms: a check is satisfied when its time is at most
``T``, tolerating up to ``4T``, frustrated above, and a failed check is frustrated. A bucket is
counted by its upper edge (docs/api.md gives the error bound).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta

from upwatch.kit.histogram import GROWTH


@dataclass(frozen=True, slots=True)
class Counts:
    """Checks over some days, and of those the ones made during maintenance."""

    total: int = 0
    up: int = 0
    degraded: int = 0
    down: int = 0
    maintenance_total: int = 0
    maintenance_up: int = 0
    maintenance_degraded: int = 0
    maintenance_down: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def counted(self) -> int:
        """Checks outside maintenance."""
        return self.total - self.maintenance_total

    @property
    def good(self) -> int:
        return self.up + self.degraded - self.maintenance_up - self.maintenance_degraded

    @property
    def failed(self) -> int:
        return self.down - self.maintenance_down


def uptime_percentage(counts: Counts) -> float | None:
    if counts.counted <= 0:
        return None
    return round(counts.good / counts.counted * 100, 4)


def upper_edge(bucket: int) -> float:
    """The largest time a histogram bucket can hold (exclusive), in ms."""
    return float(GROWTH**bucket) if bucket >= 1 else 1.0


@dataclass(frozen=True, slots=True)
class Apdex:
    threshold: float
    score: float | None
    satisfied: int
    tolerating: int
    frustrated: int


def apdex(buckets: Mapping[int, int], failed: int, threshold_ms: float) -> Apdex:
    satisfied = tolerating = frustrated = 0
    for bucket, count in buckets.items():
        edge = upper_edge(bucket)
        if edge <= threshold_ms:
            satisfied += count
        elif edge <= 4 * threshold_ms:
            tolerating += count
        else:
            frustrated += count
    frustrated += max(failed, 0)
    total = satisfied + tolerating + frustrated
    score = None if total == 0 else round((satisfied + tolerating / 2) / total, 4)
    return Apdex(threshold_ms, score, satisfied, tolerating, frustrated)


def merged_minutes(
    spans: Iterable[tuple[datetime, datetime]], since: datetime, until: datetime
) -> float:
    """Minutes of [since, until) that some span covers, overlaps counted once."""
    clipped = sorted(
        (max(start, since), min(end, until))
        for start, end in spans
        if end > since and start < until
    )
    covered = timedelta()
    current: tuple[datetime, datetime] | None = None
    for start, end in clipped:
        if current is None or start > current[1]:
            if current is not None:
                covered += current[1] - current[0]
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
    if current is not None:
        covered += current[1] - current[0]
    return covered.total_seconds() / 60


@dataclass(frozen=True, slots=True)
class Budget:
    allowed_minutes: float
    used_minutes: float
    remaining_minutes: float


@dataclass(frozen=True, slots=True)
class Report:
    uptime_percentage: float | None
    downtime_minutes: float
    maintenance_minutes: float
    incidents: int
    mttr_minutes: float | None
    mtbf_minutes: float | None
    error_budget: Budget
    apdex: Apdex


def report(
    counts: Counts,
    buckets: Mapping[int, int],
    period_minutes: float,
    maintenance_minutes: float,
    repairs: Sequence[float | None],
    target: float,
    threshold_ms: float,
) -> Report:
    """``repairs``: each incident of the period, its minutes to resolution (None while open)."""
    uptime = uptime_percentage(counts)
    measured = max(period_minutes - maintenance_minutes, 0.0)
    downtime = 0.0 if uptime is None else measured * (100 - uptime) / 100
    allowed = measured * (100 - target) / 100
    resolved = [m for m in repairs if m is not None]
    return Report(
        uptime_percentage=uptime,
        downtime_minutes=round(downtime, 2),
        maintenance_minutes=round(maintenance_minutes, 2),
        incidents=len(repairs),
        mttr_minutes=round(sum(resolved) / len(resolved), 2) if resolved else None,
        mtbf_minutes=round((measured - downtime) / len(repairs), 2) if repairs else None,
        error_budget=Budget(
            allowed_minutes=round(allowed, 2),
            used_minutes=round(downtime, 2),
            remaining_minutes=round(allowed - downtime, 2),
        ),
        apdex=apdex(buckets, counts.failed, threshold_ms),
    )


def months(first: date, last: date) -> list[tuple[date, date]]:
    """The calendar months of the days ``first`` to ``last``, the first and last clipped."""
    slices = []
    start = first
    while start <= last:
        following = date(start.year + start.month // 12, start.month % 12 + 1, 1)
        end = min(following - timedelta(days=1), last)
        slices.append((start, end))
        start = following
    return slices
