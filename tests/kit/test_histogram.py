"""Response-time histograms: merge laws, percentile accuracy, the observed range and the JSON
form."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from upwatch.kit.histogram import (
    MAX_INDEX,
    MAX_MS,
    RELATIVE_ERROR,
    Histogram,
    bucket_of,
    bucket_value,
    counted_as,
)

FAST = settings(max_examples=300, deadline=None)

# Sub-millisecond and beyond-the-cap values included, to exercise both ends.
any_times = st.floats(min_value=0, max_value=2 * MAX_MS, allow_nan=False)
measurable_times = st.floats(min_value=1, max_value=MAX_MS, allow_nan=False)
value_lists = st.lists(any_times, max_size=60)
quantiles = st.floats(min_value=0, max_value=1)
# Floating-point slack on top of the stated bound, not a loosening of it.
SLACK = 1e-9


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


@FAST
@given(value_lists, value_lists)
def test_merging_is_commutative(a: list[float], b: list[float]) -> None:
    assert (Histogram(a) + Histogram(b)).to_json() == (Histogram(b) + Histogram(a)).to_json()


@FAST
@given(value_lists, value_lists, value_lists)
def test_merging_is_associative(a: list[float], b: list[float], c: list[float]) -> None:
    left = (Histogram(a) + Histogram(b)) + Histogram(c)
    right = Histogram(a) + (Histogram(b) + Histogram(c))
    assert left.to_json() == right.to_json()


@FAST
@given(st.lists(value_lists, max_size=6), quantiles)
def test_a_merged_histogram_has_the_quantiles_of_one_built_from_all_values(
    batches: list[list[float]], q: float
) -> None:
    merged = Histogram()
    for batch in batches:
        merged.merge(Histogram(batch))
    everything = Histogram(value for batch in batches for value in batch)
    assert merged.count == everything.count
    assert merged.quantile(q) == everything.quantile(q)
    assert merged == everything


@FAST
@given(st.lists(measurable_times, min_size=1, max_size=200), quantiles)
def test_a_quantile_is_within_the_stated_relative_error_of_the_exact_percentile(
    values: list[float], q: float
) -> None:
    exact = nearest_rank(values, q)
    reported = Histogram(values).quantile(q)
    assert reported is not None
    assert abs(reported - exact) <= (RELATIVE_ERROR + SLACK) * exact


@FAST
@given(st.lists(any_times, min_size=1, max_size=200), quantiles)
def test_sub_millisecond_and_huge_values_are_off_by_at_most_half_a_millisecond_or_the_cap(
    values: list[float], q: float
) -> None:
    exact = min(nearest_rank(values, q), MAX_MS)
    reported = Histogram(values).quantile(q)
    assert reported is not None
    assert abs(reported - exact) <= max(0.5, (RELATIVE_ERROR + SLACK) * exact)


@FAST
@given(value_lists)
def test_the_json_form_round_trips_and_keeps_only_non_empty_buckets(values: list[float]) -> None:
    histogram = Histogram(values)
    data = histogram.to_json()
    assert all(count > 0 for count in data.values())
    assert sum(data.values()) == len(values)
    restored = Histogram.from_json(data)
    assert restored.buckets() == histogram.buckets()
    assert restored.observed is None  # the JSON form keeps counts only
    assert restored.count == histogram.count
    assert restored.to_json() == data


@FAST
@given(st.lists(any_times, min_size=1, max_size=100), quantiles, quantiles)
def test_quantiles_never_decrease_as_q_grows(values: list[float], p: float, q: float) -> None:
    histogram = Histogram(values)
    low, high = sorted((p, q))
    lower, upper = histogram.quantile(low), histogram.quantile(high)
    assert lower is not None
    assert upper is not None
    assert lower <= upper


@FAST
@given(any_times)
def test_every_value_falls_in_a_bucket_whose_value_is_close_to_it(value: float) -> None:
    index = bucket_of(value)
    assert 0 <= index <= MAX_INDEX
    capped = min(value, MAX_MS)
    if capped >= 1:
        assert abs(bucket_value(index) - capped) <= (RELATIVE_ERROR + SLACK) * capped
    else:
        assert index == 0


@FAST
@given(any_times, any_times)
def test_a_larger_value_never_lands_in_a_lower_bucket(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert bucket_of(low) <= bucket_of(high)


def test_an_empty_histogram_has_no_quantiles() -> None:
    empty = Histogram()
    assert empty.count == 0
    assert empty.quantile(0.5) is None
    assert empty.to_json() == {}


def test_the_median_of_a_few_response_times_is_close_to_the_middle_one() -> None:
    histogram = Histogram([100.0, 200.0, 300.0])
    median = histogram.quantile(0.5)
    assert median is not None
    assert median == pytest.approx(200.0, rel=RELATIVE_ERROR)
    assert histogram.count == 3


def test_zero_and_sub_millisecond_times_share_the_first_bucket() -> None:
    assert bucket_of(0.0) == bucket_of(0.999) == 0
    assert bucket_of(-3.0) == 0
    assert bucket_of(1.0) == 1
    assert bucket_value(0) == 0.5


def test_times_beyond_ten_minutes_are_counted_as_ten_minutes() -> None:
    assert bucket_of(MAX_MS * 10) == bucket_of(math.inf) == bucket_of(MAX_MS) == MAX_INDEX


def test_a_nan_response_time_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        Histogram().add(math.nan)


def test_a_quantile_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="quantile"):
        Histogram([1.0]).quantile(1.5)


def test_a_bucket_index_outside_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="bucket index"):
        bucket_value(MAX_INDEX + 1)


@pytest.mark.parametrize(
    "data",
    [{"x": 1}, {"-1": 1}, {str(MAX_INDEX + 1): 1}, {"3": -1}, {"3": 1.5}, {"²": 1}],
)
def test_malformed_json_is_refused_rather_than_guessed(data: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="bucket"):
        Histogram.from_json(data)


def test_zero_counts_in_json_are_dropped() -> None:
    assert Histogram.from_json({"5": 0, "6": 2}).to_json() == {"6": 2}


@FAST
@given(value_lists, value_lists)
def test_buckets_stored_in_any_split_give_back_the_histogram_of_all_values(
    first: list[float], second: list[float]
) -> None:
    # The day's histogram is stored as (bucket, count) rows incremented batch by batch.
    rows = Histogram(first).buckets() + Histogram(second).buckets()
    everything = Histogram(first + second)
    assert Histogram.from_buckets(rows, everything.observed) == everything
    assert Histogram.from_buckets(rows).count == len(first) + len(second)


def test_buckets_out_of_range_or_negative_are_refused() -> None:
    with pytest.raises(ValueError, match="not a bucket index"):
        Histogram.from_buckets([(MAX_INDEX + 1, 1)])
    with pytest.raises(ValueError, match="must hold a count"):
        Histogram.from_buckets([(3, -1)])


# --- Percentiles stay within what was measured --------------------------------------------

# Up to the cap: beyond it a value is counted as the cap (tested above).
capped_times = st.floats(min_value=0, max_value=MAX_MS, allow_nan=False)


@FAST
@given(st.lists(capped_times, min_size=1, max_size=200), quantiles)
def test_every_percentile_lies_within_the_smallest_and_largest_sample(
    values: list[float], q: float
) -> None:
    reported = Histogram(values).quantile(q)
    assert reported is not None
    assert min(values) <= reported <= max(values)


@FAST
@given(capped_times, quantiles)
def test_every_percentile_of_a_single_sample_is_that_sample(value: float, q: float) -> None:
    assert Histogram([value]).quantile(q) == value


@FAST
@given(st.lists(st.lists(capped_times, max_size=40), min_size=1, max_size=6), quantiles)
def test_percentiles_of_stored_days_lie_within_the_smallest_and_largest_sample(
    days: list[list[float]], q: float
) -> None:
    # As stored: each day's bucket rows and its smallest and largest time, summed over days.
    rows = [row for day in days for row in Histogram(day).buckets()]
    ranges = [Histogram(day).observed for day in days if day]
    values = [value for day in days for value in day]
    observed = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None
    stored = Histogram.from_buckets(rows, observed)
    assert stored == Histogram(values)
    reported = stored.quantile(q)
    if values:
        assert reported is not None
        assert min(values) <= reported <= max(values)
    else:
        assert reported is None


@FAST
@given(st.lists(any_times, min_size=1, max_size=60), st.lists(any_times, min_size=1, max_size=60))
def test_merging_keeps_the_range_of_all_values_and_an_unknown_range_stays_unknown(
    first: list[float], second: list[float]
) -> None:
    known = Histogram(first) + Histogram(second)
    assert known.observed == (
        min(counted_as(v) for v in first + second),
        max(counted_as(v) for v in first + second),
    )
    unknown = Histogram.from_buckets(Histogram(first).buckets()) + Histogram(second)
    assert unknown.observed is None
    assert (Histogram() + Histogram(first)).observed == Histogram(first).observed


def test_one_sample_of_three_hundred_milliseconds_reads_three_hundred_milliseconds() -> None:
    histogram = Histogram([300.0])
    # The bucket's own value is below the sample (294.05 ms); the range brings it back.
    assert bucket_value(bucket_of(300.0)) < 300.0
    assert [histogram.quantile(q) for q in (0.5, 0.95, 0.99)] == [300.0, 300.0, 300.0]


def test_without_a_range_buckets_give_the_bucket_value() -> None:
    rows = Histogram([100.0]).buckets()
    assert Histogram.from_buckets(rows).quantile(0.5) == bucket_value(bucket_of(100.0))
    assert Histogram.from_buckets(rows, (100.0, 100.0)).quantile(0.5) == 100.0


def test_a_range_that_does_not_fit_the_buckets_is_ignored() -> None:
    rows = Histogram([100.0, 200.0]).buckets()
    # A value stored between reading the days and reading their buckets.
    assert Histogram.from_buckets(rows, (50.0, 200.0)).observed is None
    assert Histogram.from_buckets(rows, (100.0, 200.0)).observed == (100.0, 200.0)


@FAST
@given(st.lists(capped_times, min_size=1, max_size=100))
def test_the_lowest_and_highest_percentiles_are_the_smallest_and_largest_sample_exactly(
    values: list[float],
) -> None:
    histogram = Histogram(values)
    assert (histogram.quantile(0.0), histogram.quantile(1.0)) == (min(values), max(values))
