"""The real `upwatch serve` (embedded engine, SQLite) killed with SIGKILL while its counts are
only in memory: the next start counts the unflushed batches again from their stored results,
and every aggregate then equals a recount; no stored result is lost or doubled."""

from __future__ import annotations

import asyncio
import math
import signal
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import PASSWORD, WAIT_SECONDS, eventually, terminal_line
from tests.factories import Target, bearer
from tests.live_server import LiveServer, clean_env
from upwatch.kit.histogram import bucket_of

# Processes and a file of their own: no test database fixture, so one backend's pass covers
# it; long, so in the shorter lane (scripts/test).
pytestmark = [pytest.mark.db_independent, pytest.mark.second_lane]

MONITORS = 12
PLANS = f"[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = {MONITORS}\n"
STATUSES = ("up", "down", "degraded")  # as stored: 0, 1, 2


def read(path: Path, sql: str) -> list[Any]:
    """The rows ``sql`` gives, read without writing to the file."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as database:
        return database.execute(sql).fetchall()


def count(path: Path, sql: str) -> int:
    return int(read(path, sql)[0][0])


def stored_keys(path: Path) -> list[tuple[int, int, int]]:
    return read(path, "SELECT monitor_number, region_number, checked_at_ms FROM check_results")


def recount(path: Path) -> dict[str, Any]:
    """Day, hour and histogram counts made from the stored results alone."""
    rows = read(
        path,
        "SELECT m.id, r.id, c.checked_at_ms, c.status, c.response_us FROM check_results c "
        "JOIN monitors m ON m.number = c.monitor_number "
        "JOIN regions r ON r.number = c.region_number",
    )
    days: dict[tuple[str, str, str], list[Any]] = {}
    sums: dict[tuple[str, str, str], float] = {}
    hours: dict[tuple[str, str, str], list[int]] = {}
    buckets: dict[tuple[str, str, str, int], int] = {}
    for monitor_id, region_id, at_ms, status, response_us in rows:
        at = datetime.fromtimestamp(at_ms / 1000, UTC)
        key = (monitor_id, region_id, at.strftime("%Y-%m-%d"))
        day = days.setdefault(key, [0, 0, 0, 0, 0, None, None, 0])
        day[0] += 1
        day[1 + status] += 1
        if response_us is not None:
            ms = response_us / 1000
            day[4] += 1
            day[5] = ms if day[5] is None else min(day[5], ms)
            day[6] = ms if day[6] is None else max(day[6], ms)
            sums[key] = sums.get(key, 0.0) + ms
            buckets[(*key, bucket_of(ms))] = buckets.get((*key, bucket_of(ms)), 0) + 1
        hour = hours.setdefault((monitor_id, region_id, at.strftime("%Y-%m-%dT%H")), [0] * 4)
        hour[0] += 1
        hour[1 + status] += 1
    return {
        "days": {k: tuple(v) for k, v in days.items()},
        "sums": {k: sums.get(k, 0.0) for k in days},
        "hours": {k: tuple(v) for k, v in hours.items()},
        "buckets": buckets,
    }


def aggregates(path: Path) -> dict[str, Any]:
    days = read(
        path,
        "SELECT monitor_id, region_id, day, total, up, down, degraded, response_count, "
        "response_ms_min, response_ms_max, maintenance_total, response_ms_sum "
        "FROM daily_aggregates",
    )
    return {
        "days": {tuple(row[:3]): tuple(row[3:11]) for row in days},
        "sums": {tuple(row[:3]): row[11] for row in days},
        "hours": {
            tuple(row[:3]): tuple(row[3:])
            for row in read(
                path,
                "SELECT monitor_id, region_id, hour, total, up, down, degraded FROM hourly_counts",
            )
        },
        "buckets": {
            tuple(row[:4]): row[4]
            for row in read(
                path,
                "SELECT monitor_id, region_id, day, bucket, count FROM daily_histogram_buckets",
            )
        },
    }


async def kill(server: LiveServer) -> None:
    """SIGKILL, as a crash: no shutdown, no last flush."""
    assert server.process is not None
    server.process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(server.process.wait)


def differences(stored: dict[Any, Any], counted: dict[Any, Any]) -> list[str]:
    """A few keys whose stored count is not the recount, and how many there are: 10,000
    monitors' counts compared whole would fill the terminal."""
    keys = [key for key in stored.keys() | counted.keys() if stored.get(key) != counted.get(key)]
    return (
        [f"{len(keys)} differ, e.g."]
        + [f"{key}: stored {stored.get(key)}, recounted {counted.get(key)}" for key in keys[:3]]
        if keys
        else []
    )


def assert_kept_and_recounted(
    before: list[tuple[int, int, int]],
    after: list[tuple[int, int, int]],
    stored: dict[str, Any],
    counted: dict[str, Any],
) -> None:
    """Every result stored before the kill is still there, none twice, and every stored
    count equals the recount."""
    assert set(before) <= set(after)
    assert len(after) == len(set(after))
    for table in ("days", "hours", "buckets"):
        assert not differences(stored[table], counted[table]), table
    for key, total in counted["sums"].items():
        assert math.isclose(stored["sums"][key], total, rel_tol=1e-9), key


async def test_a_service_killed_with_its_counts_in_memory_recounts_them_on_the_next_start(
    tmp_path: Path, target: Target
) -> None:
    plans = tmp_path / "plans.toml"
    plans.write_text(PLANS)
    env = clean_env(UPWATCH_ALLOW_PRIVATE_TARGETS="true", UPWATCH_PLANS_FILE=str(plans))
    database = tmp_path / "data" / "upwatch.db"
    account = {"email": "ops@example.com", "password": PASSWORD}

    # No flush before the kill: every count of the first run is in its memory only.
    first = LiveServer(tmp_path, {**env, "UPWATCH_AGGREGATE_FLUSH_SECONDS": "3600"})
    await asyncio.to_thread(first.start)
    try:
        async with httpx.AsyncClient(base_url=first.url, timeout=30) as api:
            headers = bearer(await api.post("/auth/signup", json=account), 201)
            project = await api.post("/projects", headers=headers, json={"name": "Shop"})
            assert project.status_code == 201, project.text
            ids = []
            for n in range(MONITORS):
                made = await api.post(
                    "/monitors",
                    headers=headers,
                    json={
                        "projectId": project.json()["id"],
                        "name": f"page {n}",
                        "type": "http",
                        "url": f"{target.url}?page={n}",
                        "intervalSeconds": 10,
                        # Some degraded results beside the up ones.
                        **({"degradedThresholdMs": 0.001} if n % 3 == 0 else {}),
                    },
                )
                assert made.status_code == 201, made.text
                ids.append(made.json()["id"])

        def batches_unflushed(at_least: int) -> Callable[[], bool]:
            return lambda: count(database, "SELECT count(*) FROM unflushed_batches") >= at_least

        # Every monitor checked at least twice, in several batches.
        await eventually(lambda: count(database, "SELECT count(*) FROM check_results") >= 16)
        await eventually(batches_unflushed(3))
        await kill(first)
    finally:
        first.stop()

    before = stored_keys(database)
    left = read(database, "SELECT id FROM unflushed_batches")
    assert len(left) >= 3
    assert count(database, "SELECT coalesce(sum(total), 0) FROM daily_aggregates") < len(before)

    second = LiveServer(tmp_path, {**env, "UPWATCH_AGGREGATE_FLUSH_SECONDS": "1"})
    await asyncio.to_thread(second.start)
    try:
        async with httpx.AsyncClient(base_url=second.url, timeout=30) as api:
            login = await api.post("/auth/login", json=account)
            headers = bearer(login)

            def recovered() -> bool:
                remaining = {row[0] for row in read(database, "SELECT id FROM unflushed_batches")}
                return not remaining & {row[0] for row in left}

            await eventually(recovered)
            # Batches of this run, counted in memory and flushed, beside the recounted ones.
            await eventually(
                lambda: count(database, "SELECT count(*) FROM check_results") > len(before) + 6
            )
            # Paused, the monitors store nothing more: what is stored is then all counted
            # once the last batches are flushed.
            for monitor_id in ids:
                paused = await api.patch(
                    f"/monitors/{monitor_id}", headers=headers, json={"isActive": False}
                )
                assert paused.status_code == 200, paused.text
            await eventually(lambda: count(database, "SELECT count(*) FROM unflushed_batches") == 0)
            after = stored_keys(database)
            stored, counted = aggregates(database), recount(database)
    finally:
        second.stop()

    assert_kept_and_recounted(before, after, stored, counted)


# Each checked every 10 s (the shortest interval): 1,000 checks a second offered.
BUSY_MONITORS = 10_000


def clone_monitor(path: Path, copies: int, url: str) -> None:
    """``copies`` more monitors like the one stored, each with its own id, number, name and
    address: made through the API one request at a time they would take minutes."""
    with closing(sqlite3.connect(path)) as database:
        columns = [row[1] for row in database.execute("PRAGMA table_info(monitors)")]
        (model,) = database.execute("SELECT * FROM monitors").fetchall()
        rows = []
        for n in range(1, copies + 1):
            row = dict(zip(columns, model, strict=True))
            row.update(
                id=uuid.uuid4().hex,
                number=row["number"] + n,
                name=f"busy {n}",
                url=f"{url}?busy={n}",
                # Some degraded results beside the up ones.
                degraded_threshold_ms=0.001 if n % 3 == 0 else None,
            )
            rows.append(tuple(row.values()))
        marks = ",".join("?" * len(columns))
        with database:
            database.executemany(f"INSERT INTO monitors VALUES ({marks})", rows)  # noqa: S608


async def test_a_service_killed_during_a_thousand_checks_a_second_loses_none_doubles_none_and_recounts_exactly(  # noqa: E501
    tmp_path: Path, target: Target, request: pytest.FixtureRequest
) -> None:
    plans = tmp_path / "plans.toml"
    plans.write_text(f"[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = {BUSY_MONITORS}\n")
    # Counts flushed every 2 s: the kill lands between flushes, with batches counted in
    # memory only, while flushes and batches keep coming.
    env = clean_env(
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_AGGREGATE_FLUSH_SECONDS="2",
    )
    database = tmp_path / "data" / "upwatch.db"
    stored = "SELECT count(*) FROM check_results"

    setup = LiveServer(tmp_path, {**env, "UPWATCH_ENGINE": "false"})
    await asyncio.to_thread(setup.start)
    try:
        async with httpx.AsyncClient(base_url=setup.url, timeout=30) as api:
            account = {"email": "ops@example.com", "password": PASSWORD}
            headers = bearer(await api.post("/auth/signup", json=account), 201)
            project = await api.post("/projects", headers=headers, json={"name": "Busy"})
            assert project.status_code == 201, project.text
            made = await api.post(
                "/monitors",
                headers=headers,
                json={
                    "projectId": project.json()["id"],
                    "name": "busy 0",
                    "type": "http",
                    "url": f"{target.url}?busy=0",
                    "intervalSeconds": 10,
                },
            )
            assert made.status_code == 201, made.text
    finally:
        setup.stop()
    clone_monitor(database, BUSY_MONITORS - 1, target.url)

    first = LiveServer(tmp_path, env)
    await asyncio.to_thread(first.start)
    try:
        # Half the monitors checked, then the rate of two seconds. A loaded machine (a CI run's
        # other lane) stores fewer a second: longer bounds, whatever the rate reached.
        await eventually(lambda: count(database, stored) >= BUSY_MONITORS // 2, 3 * WAIT_SECONDS)
        await eventually(lambda: count(database, "SELECT count(*) FROM unflushed_batches") >= 2)
        loop = asyncio.get_running_loop()
        since, rows_then = loop.time(), count(database, stored)
        await asyncio.sleep(2)  # a measuring window, not a wait for a condition
        rate = (count(database, stored) - rows_then) / (loop.time() - since)
        await kill(first)
    finally:
        first.stop()

    before = stored_keys(database)
    left = {row[0] for row in read(database, "SELECT id FROM unflushed_batches")}
    terminal_line(request)(
        f"killed while storing {rate:.0f} checks/s, with {len(before)} results stored and "
        f"{len(left)} batches not yet counted"
    )

    second = LiveServer(tmp_path, env)
    await asyncio.to_thread(second.start)
    try:
        await eventually(
            lambda: (
                not left & {row[0] for row in read(database, "SELECT id FROM unflushed_batches")}
            )
        )
        await eventually(
            lambda: count(database, stored) > len(before) + BUSY_MONITORS // 2, 3 * WAIT_SECONDS
        )
    finally:
        second.stop()  # SIGTERM: a stop flushes what it counted in memory

    assert count(database, "SELECT count(*) FROM unflushed_batches") == 0
    assert_kept_and_recounted(
        before, stored_keys(database), aggregates(database), recount(database)
    )
