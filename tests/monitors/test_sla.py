"""SLA reports: figures from aggregates equal the brute force over raw results, maintenance left
out, the cast's walls and every error."""

from __future__ import annotations

import csv
import io
import itertools
import math
from datetime import UTC, date, datetime, time, timedelta

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import ingest
from tests.maintenance.test_windows import iso
from upwatch.kit.clock import ManualClock
from upwatch.kit.histogram import GROWTH, Histogram
from upwatch.monitors.sla import Counts, apdex, merged_minutes, months, uptime_percentage

settings_overrides = overriding(allow_private_targets=True)


async def test_an_sla_report_leaves_maintenance_out_and_counts_incidents_and_apdex(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300, retries=0)
    engine = app.state.engine
    # Yesterday, 10:00-12:00 UTC: a check every 10 minutes, failing 10:30-10:50; a window
    # 11:00-11:30 in which every check fails and counts for nothing.
    day = (clock.now() - timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    window = await as_alice.post(
        "/maintenance-windows",
        title="Upgrade",
        startsAt=iso(day + timedelta(hours=11)),
        endsAt=iso(day + timedelta(hours=11, minutes=30)),
    )
    assert window.status_code == 201, window.text
    for step in range(13):
        at = day + timedelta(hours=10, minutes=10 * step)
        failing = (at.hour == 10 and 30 <= at.minute <= 50) or (at.hour == 11 and at.minute < 30)
        await ingest(engine, monitor["id"], at, ok=not failing)
    last = day.date().isoformat()
    answer = await client.get(
        f"/monitors/{monitor['id']}/sla",
        headers=cast.bob.headers,
        params={"from": last, "to": last, "target": 99, "apdexT": 10},
    )
    assert answer.status_code == 200, answer.text
    report = answer.json()
    # 13 checks, 3 in the window; of the other 10, the 3 of 10:30-10:50 failed.
    assert report["uptimePercentage"] == 70.0
    assert report["maintenanceMinutes"] == 30.0
    measured = 24 * 60 - 30
    assert report["downtimeMinutes"] == pytest.approx(measured * 0.3, abs=0.01)
    assert report["errorBudget"]["allowedMinutes"] == pytest.approx(measured * 0.01, abs=0.01)
    assert report["errorBudget"]["remainingMinutes"] < 0
    # One outage opened at 10:30 and resolved at 11:00? No: the check at 11:00 is in the
    # window, so the status waits; 11:30 resolves it after an hour.
    assert report["incidents"] == 1
    assert report["mttrMinutes"] == 60.0
    # Every successful check took 12 ms (the factory's), above T = 10 and below 4T.
    assert report["apdex"] == {
        "threshold": 10.0,
        "score": pytest.approx(7 / 2 / 10, abs=1e-4),
        "satisfied": 0,
        "tolerating": 7,
        "frustrated": 3,
    }
    assert (report["from"], report["to"], report["target"]) == (last, last, 99.0)


async def test_sla_walls_and_errors(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    path = f"/monitors/{monitor['id']}/sla"
    assert_problem(await client.get(path), 401)
    assert_problem(await client.get(path, headers=cast.charlie.headers), 404)
    empty = await client.get(path, headers=cast.alice.headers)
    assert empty.status_code == 200, empty.text
    assert empty.json()["uptimePercentage"] is None  # no checks yet
    assert empty.json()["apdex"]["score"] is None
    today = clock.now().date()
    for params, field in (
        ({"from": today.isoformat(), "to": (today - timedelta(days=1)).isoformat()}, "to"),
        ({"from": (today - timedelta(days=400)).isoformat()}, "to"),
        ({"target": "0"}, "target"),
        ({"target": "101"}, "target"),
        ({"apdexT": "0"}, "apdexT"),
        ({"from": "yesterday"}, "from"),
        ({"to": "0"}, "to"),  # not Unix time
        ({"to": f"{today}T00:00:00"}, "to"),
    ):
        problem = assert_problem(
            await client.get(path, headers=cast.alice.headers, params=params), 422
        )
        assert field in problem["detail"], problem


async def test_a_project_sla_pools_its_monitors_and_its_csv_has_a_row_per_month(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    engine = app.state.engine
    shop, api = [
        await as_alice.monitor(name=name, url="http://127.0.0.1:9/", intervalSeconds=300, retries=0)
        for name in ("Shop", "API")
    ]  # fmt: skip
    # The last day of a month and the first of the next, both wholly past.
    second = (clock.now().date().replace(day=1) - timedelta(days=1)).replace(day=1)
    first = second - timedelta(days=1)
    day1 = datetime.combine(first, time(), UTC)
    day2 = datetime.combine(second, time(), UTC)
    window = await as_alice.post(
        "/maintenance-windows",
        title="Shop upgrade",
        startsAt=iso(day2 + timedelta(hours=10)),
        endsAt=iso(day2 + timedelta(hours=11)),
        monitorIds=[shop["id"]],
    )
    assert window.status_code == 201, window.text
    for monitor, at, ok in (
        (shop, day1 + timedelta(hours=10), True),
        (shop, day1 + timedelta(hours=10, minutes=10), True),
        (shop, day2 + timedelta(hours=10, minutes=10), False),  # in the window
        (shop, day2 + timedelta(hours=12), True),
        (api, day2 + timedelta(hours=12), False),  # an incident of 10 minutes
        (api, day2 + timedelta(hours=12, minutes=10), True),
    ):
        await ingest(engine, monitor["id"], at, ok=ok)
    path = f"/projects/{cast.project_id}/sla"
    period = {"from": first.isoformat(), "to": second.isoformat()}
    answer = await client.get(path, headers=cast.bob.headers, params=period)
    assert answer.status_code == 200, answer.text
    whole = answer.json()
    # 5 checks outside maintenance, 4 good; the window covers one of two monitors.
    assert whole["uptimePercentage"] == 80.0
    assert whole["maintenanceMinutes"] == 30.0
    assert (whole["incidents"], whole["mttrMinutes"]) == (1, 10.0)
    assert whole["downtimeMinutes"] == pytest.approx((2 * 24 * 60 - 30) * 0.2, abs=0.01)

    sheet = await client.get(path, headers=cast.bob.headers, params={**period, "format": "csv"})
    assert sheet.status_code == 200, sheet.text
    assert sheet.headers["content-type"].startswith("text/csv")
    assert "attachment" in sheet.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(sheet.text)))
    assert [(r["from"], r["to"]) for r in rows] == [
        (first.isoformat(), first.isoformat()),
        (second.isoformat(), second.isoformat()),
        (first.isoformat(), second.isoformat()),
    ]
    assert [float(r["uptimePercentage"]) for r in rows] == [100.0, 66.6667, 80.0]
    assert [r["incidents"] for r in rows] == ["0", "1", "1"]
    assert [float(r["maintenanceMinutes"]) for r in rows] == [0.0, 30.0, 30.0]
    assert rows[0]["mttrMinutes"] == ""  # no incident: no figure
    assert float(rows[2]["apdexScore"]) == whole["apdex"]["score"]

    # A monitor's own report leaves out only its own windows.
    own = await client.get(f"/monitors/{api['id']}/sla", headers=cast.alice.headers, params=period)
    assert own.json()["maintenanceMinutes"] == 0.0
    assert own.json()["uptimePercentage"] == 50.0


async def test_project_sla_walls_and_errors(client: httpx.AsyncClient, cast: Cast) -> None:
    path = f"/projects/{cast.project_id}/sla"
    assert_problem(await client.get(path), 401)
    assert_problem(await client.get(path, headers=cast.charlie.headers), 404)
    assert_problem(await client.get("/projects/nope/sla", headers=cast.alice.headers), 404)
    empty = await client.get(path, headers=cast.bob.headers)
    assert empty.status_code == 200, empty.text
    assert empty.json()["uptimePercentage"] is None
    for params, field in (
        ({"format": "pdf"}, "format"),
        ({"from": "2026-02-30"}, "from"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "to"),
        ({"from": "9999-12-01", "to": "9999-12-31", "format": "csv"}, "to"),
    ):
        problem = assert_problem(
            await client.get(path, headers=cast.alice.headers, params=params), 422
        )
        assert field in problem["detail"], problem


@given(st.dates(), st.dates())
def test_the_months_of_a_period_cover_it_day_by_day_without_overlap(a: date, b: date) -> None:
    first, last = min(a, b), max(a, b)
    if (last - first).days > 800:
        last = first + timedelta(days=800)
    parts = months(first, last)
    assert (parts[0][0], parts[-1][1]) == (first, last)
    for (_, end), (start, _) in itertools.pairwise(parts):
        assert (start - end, start.day) == (timedelta(days=1), 1)
    assert all(s.month == e.month and s.year == e.year and s <= e for s, e in parts)


results = st.lists(
    st.tuples(
        st.booleans(),  # ok
        st.floats(min_value=0, max_value=5000, allow_nan=False),  # response time, ms
        st.booleans(),  # made during maintenance
    ),
    max_size=200,
)


@given(results, st.integers(min_value=1, max_value=2000))
def test_sla_figures_from_counts_and_buckets_equal_the_brute_force_over_raw_results(
    raw: list[tuple[bool, float, bool]], threshold: int
) -> None:
    counts = Counts()
    histogram = Histogram()
    for ok, ms, held in raw:
        up, down = int(ok), int(not ok)
        counts += Counts(1, up, 0, down, int(held), up * held, 0, down * held)
        if ok:
            histogram.add(ms)
    outside = [ok for ok, _, held in raw if not held]
    uptime = uptime_percentage(counts)
    if outside:
        assert uptime == round(sum(outside) / len(outside) * 100, 4)
        assert 0 <= uptime <= 100
    else:
        assert uptime is None
    # Apdex by bucket edges: a time can only be judged one class worse than exactly, and only
    # when it lies within one bucket (5 %) below T or 4T.
    failed = sum(1 for ok, _, held in raw if not ok and not held)
    found = apdex(dict(histogram.buckets()), failed, threshold)
    times = [ms for ok, ms, _ in raw if ok]
    exact_satisfied = sum(ms <= threshold for ms in times)
    exact_tolerating = sum(threshold < ms <= 4 * threshold for ms in times)
    near = sum(
        edge / GROWTH - 1e-9 <= ms <= edge or ms < 1 <= edge
        for ms in times
        for edge in (threshold, 4 * threshold)
    )
    assert found.satisfied + found.tolerating + found.frustrated == len(times) + failed
    assert found.satisfied <= exact_satisfied
    assert (
        abs(found.satisfied - exact_satisfied) + abs(found.tolerating - exact_tolerating)
        <= 2 * near
    )
    if found.score is not None:
        assert 0 <= found.score <= 1
        assert not math.isnan(found.score)


def test_maintenance_minutes_count_overlapping_windows_once() -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    spans = [
        (start + timedelta(hours=1), start + timedelta(hours=2)),
        (start + timedelta(hours=1, minutes=30), start + timedelta(hours=3)),
        (start - timedelta(hours=1), start + timedelta(minutes=10)),
    ]
    assert merged_minutes(spans, start, start + timedelta(days=1)) == 10 + 120
