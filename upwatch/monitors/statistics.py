"""Uptime and response-time figures from day aggregates (and raw rows for the last 24 h).

A period's counts come from ``daily_aggregates`` and its histogram from the summed bucket rows
of ``daily_histogram_buckets``; merged, they give the same figures as the raw values would
(within the histogram's bucket error for percentiles). The days' smallest and largest times
bound the percentiles, so none lies outside what was measured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from upwatch.kit.histogram import DayTotals, Histogram
from upwatch.models import CheckResult, DailyAggregate

PERIOD_DAYS = {"7d": 7, "30d": 30, "90d": 90}
COUNTERS = ("total", "up", "down", "degraded", "response_ms_sum", "response_count")


@dataclass
class Figures(DayTotals):
    def add_aggregate(self, day: DailyAggregate) -> None:
        self._add_counts(day)

    def _add_counts(self, other: DailyAggregate | Figures) -> None:
        # A stored day and a span in memory carry the same counters under the same names.
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def add_buckets(
        self, buckets: Iterable[tuple[int, int]], observed: tuple[float, float] | None = None
    ) -> None:
        """Add stored histogram buckets, (index, count) pairs, of the same days, and the
        smallest and largest time among them when known."""
        self.histogram.merge(Histogram.from_buckets(buckets, observed))

    def merge(self, other: Figures) -> None:
        self._add_counts(other)
        self.histogram.merge(other.histogram)

    def add_result(self, result: CheckResult) -> None:
        self.total += 1
        if result.status == "up":
            self.up += 1
        elif result.status == "degraded":
            self.degraded += 1
        else:
            self.down += 1
        if result.response_time_ms is not None:
            self.response_ms_sum += result.response_time_ms
            self.response_count += 1
            self.histogram.add(result.response_time_ms)

    @property
    def uptime(self) -> float | None:
        """Degraded checks count as up: the service answered, slowly."""
        if not self.total:
            return None
        return round((self.up + self.degraded) / self.total * 100, 3)

    @property
    def average_ms(self) -> float | None:
        if not self.response_count:
            return None
        return round(self.response_ms_sum / self.response_count, 2)

    def percentile(self, q: float) -> float | None:
        value = self.histogram.quantile(q)
        return None if value is None else round(value, 2)


def from_counts(counts: Iterable[tuple[str, int]], response_times: Iterable[float]) -> Figures:
    """Figures from (status, checks) counts and the response times of the same checks."""
    figures = Figures()
    for status, checks in counts:
        figures.total += checks
        if status == "up":
            figures.up += checks
        elif status == "degraded":
            figures.degraded += checks
        else:
            figures.down += checks
    for value in response_times:
        figures.response_ms_sum += value
        figures.response_count += 1
        figures.histogram.add(value)
    return figures


def first_day(period: str, now: datetime) -> str:
    """Days are whole UTC days: "7d" is today and the six days before it."""
    days = PERIOD_DAYS[period]
    return (now.date() - timedelta(days=days - 1)).isoformat()


def since_24h(now: datetime) -> datetime:
    return now - timedelta(hours=24)


def from_aggregates(
    days: Iterable[DailyAggregate], buckets: Iterable[tuple[int, int]] = ()
) -> Figures:
    """Figures of stored days: their counts, and their histogram buckets when percentiles are
    wanted (uptime alone needs none)."""
    figures = Figures()
    days = list(days)
    for day in days:
        figures.add_aggregate(day)
    figures.add_buckets(buckets, observed_range(days))
    return figures


def observed_range(days: Iterable[DailyAggregate]) -> tuple[float, float] | None:
    """The smallest and largest response time of ``days``; None when a day with times has no
    stored range (days stored before ranges were kept, whose raw results were gone)."""
    low: float | None = None
    high: float | None = None
    for day in days:
        if not day.response_count:
            continue
        if day.response_ms_min is None or day.response_ms_max is None:
            return None
        low = day.response_ms_min if low is None else min(low, day.response_ms_min)
        high = day.response_ms_max if high is None else max(high, day.response_ms_max)
    return None if low is None or high is None else (low, high)


def from_results(results: Iterable[CheckResult]) -> Figures:
    figures = Figures()
    for result in results:
        figures.add_result(result)
    return figures


def day_string(value: date) -> str:
    return value.isoformat()
