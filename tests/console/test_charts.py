"""The monitor page's chart and day bars, drawn from points alone (no database)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest

from upwatch.console import charts
from upwatch.kit.histogram import Histogram

pytestmark = pytest.mark.db_independent

NOW = datetime(2026, 11, 25, 14, 30, tzinfo=UTC)


def test_hourly_points_put_each_check_in_its_hour_and_leave_empty_hours_blank() -> None:
    times = [(NOW - timedelta(minutes=10), 100.0), (NOW - timedelta(minutes=20), 300.0)]
    times += [(NOW - timedelta(hours=5, minutes=m), float(m)) for m in range(1, 21)]
    times.append((NOW - timedelta(hours=30), 9999.0))  # older than the chart: left out
    points = charts.hourly(times, NOW)
    assert len(points) == 24
    assert points[-1].label == "14:00"
    assert points[0].label == "15:00"
    assert (points[-1].p50, points[-1].p95) == (100.0, 300.0)
    five_ago = points[-6]
    assert five_ago.label == "09:00"
    assert five_ago.p50 is not None
    assert 9 <= five_ago.p50 <= 11
    assert five_ago.p95 is not None
    assert 18 <= five_ago.p95 <= 20
    assert points[-2].p50 is None
    assert points[-2].p95 is None


def test_daily_points_read_each_days_stored_buckets_summed_over_regions() -> None:
    first = date(2026, 11, 19)
    one = Histogram([50.0] * 9 + [400.0])
    buckets = [("2026-11-20", b, c) for b, c in one.buckets()]
    points = charts.daily(buckets, first, 7)
    assert [p.label for p in points][:2] == ["2026-11-19", "2026-11-20"]
    assert points[0].p50 is None
    assert points[1].p50 == pytest.approx(50.0, rel=0.05)
    assert points[1].p95 == pytest.approx(400.0, rel=0.05)


def test_the_chart_draws_both_lines_with_a_gap_where_hours_had_no_checks() -> None:
    points = [
        charts.Point("12:00", 100.0, 180.0),
        charts.Point("13:00", None, None),
        charts.Point("14:00", 120.0, 450.0),
    ]
    svg = str(charts.chart(points))
    p95 = re.search(r'class="p95" d="([^"]+)"', svg)
    assert p95
    assert p95.group(1).count("M") == 2
    assert 'class="p50"' in svg
    assert ">500 ms<" in svg  # the axis' top is the next round figure above 450
    assert "Median response time from 100 ms to 120 ms; p95 from 180 ms to 450 ms" in svg


def test_a_range_without_checks_says_so_instead_of_drawing_nothing() -> None:
    assert "No response times" in str(charts.chart([charts.Point("12:00", None, None)]))


def test_day_bars_colour_each_of_ninety_days_and_say_it_in_words() -> None:
    today = date(2026, 11, 25)
    counts = {"2026-11-25": (100, 100, 0, 0), "2026-11-24": (100, 50, 0, 50)}
    svg = str(charts.day_bars(counts, today))
    assert svg.count("<rect") == 90
    assert "2026-11-25: 100.00 % uptime" in svg
    assert "day-major_outage" in svg or "day-partial_outage" in svg
    assert "2026-08-28: no data" in svg  # the first of the ninety
    assert "75.00 % uptime, 1 day with outages" in svg
