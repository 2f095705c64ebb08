"""Mergeable response-time histograms, for per-day aggregates and their percentiles.

Buckets are log-scale with growth factor ``GROWTH = 1.05``:

- bucket 0 holds every value below 1 ms, including 0 (negative values are counted as 0), and is
  reported as 0.5 ms, so its error is at most 0.5 ms in absolute terms;
- bucket ``i >= 1`` holds ``[GROWTH**(i-1), GROWTH**i)`` ms and is reported as
  ``2 * GROWTH**i / (GROWTH + 1)``, the point whose worst relative distance to both edges is the
  same. A percentile is reported as the representative value of the bucket holding the exact
  nearest-rank percentile, so for values >= 1 ms its error is at most
  ``(GROWTH - 1) / (GROWTH + 1)``, about **2.44 %** of the true value;
- values above ``MAX_MS`` (10 minutes, far beyond any probe timeout) are counted as ``MAX_MS``,
  in bucket ``MAX_INDEX`` (274 buckets in all), and infinity likewise; NaN is refused.

A histogram is a sparse mapping bucket index -> count. Histograms merge by adding counts, so a
day's histogram can be built from batches in any order and a period's from its days, and the
percentiles come out as if computed over all values at once. ``buckets`` gives the non-empty
buckets as (index, count) pairs, the form stored per day (one row per bucket, so adding a batch
is an increment in SQL); ``to_json`` keeps them keyed by the index as a string.

A histogram also knows the smallest and largest value it counted (``observed``), and a
percentile is clamped to that range: a bucket's representative value may lie outside what was
measured (one sample of 300 ms would read 294.05 ms), and a percentile never does. Buckets alone
do not tell the range; ``from_buckets`` takes it from the caller (the stored day minimum and
maximum), and without it the estimate is the bucket value, unclamped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

GROWTH = 1.05
MAX_MS = 600_000.0
RELATIVE_ERROR = (GROWTH - 1) / (GROWTH + 1)

_LOG_GROWTH = math.log(GROWTH)


def _lower_bound(index: int) -> float:
    return 0.0 if index == 0 else GROWTH ** (index - 1)


def bucket_of(value_ms: float) -> int:
    """Index of the bucket that counts ``value_ms``."""
    if math.isnan(value_ms):
        raise ValueError("a response time cannot be NaN")
    value = min(value_ms, MAX_MS)
    if value < 1.0:
        return 0
    index = math.floor(math.log(value) / _LOG_GROWTH) + 1
    # The logarithm can land one bucket off near an edge; settle it against the edges themselves
    # so that bucket_of and the bucket bounds (hence the error bound) always agree.
    if value < _lower_bound(index):
        index -= 1
    elif value >= _lower_bound(index + 1):
        index += 1
    return index


MAX_INDEX = bucket_of(MAX_MS)


def counted_as(value_ms: float) -> float:
    """The value a histogram counts for ``value_ms``: negatives as 0, beyond the cap as the cap."""
    if math.isnan(value_ms):
        raise ValueError("a response time cannot be NaN")
    return min(max(value_ms, 0.0), MAX_MS)


def bucket_value(index: int) -> float:
    """The value a bucket's members are reported as."""
    if not 0 <= index <= MAX_INDEX:
        raise ValueError(f"bucket index must be within 0..{MAX_INDEX}, not {index}")
    if index == 0:
        return 0.5
    return 2 * GROWTH**index / (GROWTH + 1)


class Histogram:
    """Counts of response times per log-scale bucket, and the range of the values counted."""

    __slots__ = ("_counts", "_observed", "_total")

    def __init__(self, values_ms: Iterable[float] = ()) -> None:
        self._counts: dict[int, int] = {}
        self._total = 0
        # (smallest, largest) value counted; None when empty, or unknown (built from buckets).
        self._observed: tuple[float, float] | None = None
        for value in values_ms:
            self.add(value)

    @property
    def count(self) -> int:
        """How many values were added."""
        return self._total

    @property
    def observed(self) -> tuple[float, float] | None:
        """The smallest and largest value counted (as counted: see ``counted_as``); None when
        the histogram is empty or its range is unknown."""
        return self._observed

    def add(self, value_ms: float) -> None:
        value = counted_as(value_ms)
        index = bucket_of(value)
        if self._total == 0:
            self._observed = (value, value)
        elif self._observed is not None:
            low, high = self._observed
            self._observed = (min(low, value), max(high, value))
        self._counts[index] = self._counts.get(index, 0) + 1
        self._total += 1

    def merge(self, other: Histogram) -> None:
        """Add every value of ``other`` to this histogram."""
        if other._total == 0:
            return
        if self._total == 0:
            self._observed = other._observed
        elif self._observed is not None and other._observed is not None:
            low, high = self._observed
            self._observed = (min(low, other._observed[0]), max(high, other._observed[1]))
        else:
            self._observed = None  # one side's range is unknown, so the whole one is
        for index, count in other._counts.items():
            self._counts[index] = self._counts.get(index, 0) + count
        self._total += other._total

    def __add__(self, other: Histogram) -> Histogram:
        combined = Histogram()
        combined.merge(self)
        combined.merge(other)
        return combined

    def quantile(self, q: float) -> float | None:
        """The nearest-rank ``q`` quantile (0 <= q <= 1) as a bucket value, clamped to the
        observed range when it is known (and then exact for the first and last rank); None
        when empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"a quantile must be within 0..1, not {q}")
        if self._total == 0:
            return None
        rank = max(1, math.ceil(q * self._total))
        if self._observed is not None and rank in (1, self._total):
            # The first and last ranked values are the smallest and largest: known exactly.
            return self._observed[0] if rank == 1 else self._observed[1]
        seen = 0
        for index in sorted(self._counts):
            seen += self._counts[index]
            if seen >= rank:
                value = bucket_value(index)
                if self._observed is not None:
                    value = min(max(value, self._observed[0]), self._observed[1])
                return value
        raise AssertionError("unreachable: the counts add up to the total")

    def buckets(self) -> list[tuple[int, int]]:
        """The non-empty buckets as (index, count), by index."""
        return [(index, self._counts[index]) for index in sorted(self._counts)]

    @classmethod
    def from_buckets(
        cls, buckets: Iterable[tuple[int, int]], observed: tuple[float, float] | None = None
    ) -> Histogram:
        """The histogram of (index, count) pairs; an index may repeat (its counts add up).

        ``observed`` is the smallest and largest value counted, when known. A range that does
        not fall in the lowest and highest buckets is ignored: it belongs to other values (a
        batch stored between two reads), and clamping to it could only mislead."""
        histogram = cls()
        for index, count in buckets:
            if not 0 <= index <= MAX_INDEX:
                raise ValueError(f"not a bucket index: {index!r}")
            if count < 0:
                raise ValueError(f"bucket {index} must hold a count, not {count!r}")
            if count:
                histogram._counts[index] = histogram._counts.get(index, 0) + count
                histogram._total += count
        if observed is not None and histogram._total:
            low, high = counted_as(observed[0]), counted_as(observed[1])
            if bucket_of(low) == min(histogram._counts) and bucket_of(high) == max(
                histogram._counts
            ):
                histogram._observed = (low, high)
        return histogram

    def to_json(self) -> dict[str, int]:
        return {str(index): self._counts[index] for index in sorted(self._counts)}

    @classmethod
    def from_json(cls, data: Mapping[str, int]) -> Histogram:
        """The histogram ``to_json`` described; refuses malformed data rather than guessing."""
        histogram = cls()
        for key, count in data.items():
            if not (key.isascii() and key.isdigit()) or not 0 <= int(key) <= MAX_INDEX:
                raise ValueError(f"not a bucket index: {key!r}")
            if type(count) is not int or count < 0:
                raise ValueError(f"bucket {key} must hold a count, not {count!r}")
            if count:
                histogram._counts[int(key)] = histogram._counts.get(int(key), 0) + count
                histogram._total += count
        return histogram

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Histogram):
            return NotImplemented
        return self._counts == other._counts and self._observed == other._observed

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable

    def __repr__(self) -> str:
        return (
            f"Histogram(count={self._total}, observed={self._observed}, buckets={self.to_json()})"
        )


@dataclass
class DayTotals:
    """Checks of one monitor in one region over a span (a day, or days summed): the counts by
    status, the response-time sum and the histogram (with the smallest and largest time). The
    ingester adds results to it; the statistics add stored days to it."""

    total: int = 0
    up: int = 0
    down: int = 0
    degraded: int = 0
    response_ms_sum: float = 0.0
    response_count: int = 0
    histogram: Histogram = field(default_factory=Histogram)
    # Of the counts above, those made during a maintenance window.
    maintenance_total: int = 0
    maintenance_up: int = 0
    maintenance_down: int = 0
    maintenance_degraded: int = 0
