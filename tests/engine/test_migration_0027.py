"""Migration 0027 turns every wide result row (three text keys, a text time, timings in a
table of their own) into a compact one, keeps every value, and turns them back."""

from __future__ import annotations

import json
import logging
import os
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from tests.conftest import BACKEND
from tests.engine.conftest import add_project, insert_early_monitor, migrate
from upwatch.models.compact import epoch_ms

# The size of the bulk conversion; CI runs the million the issue names.
BULK_ROWS = int(os.environ.get("UPWATCH_TEST_MIGRATION_ROWS", "1000000"))
AT = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
LATER = timedelta(seconds=20)


def _stamp(moment: datetime) -> object:
    """How the old schema's UTC column stores ``moment`` on this backend."""
    if BACKEND == "postgresql":
        return moment
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


async def _old_rows(session: AsyncSession, monitor_id: str) -> None:
    """Four results of the 0026 schema, and the timings of two."""
    await session.execute(
        text(
            "INSERT INTO regions (id, code, name, builtin, workers, created_at) "
            "VALUES ('r1', 'eu', 'Europe', false, 0, :at)"
        ),
        {"at": _stamp(AT)},
    )
    rows = [
        # id, region, status, code, ms, error kind, error, evidence, cert days, at
        (1, "r1", "up", 200, 12.345678, None, None, None, 40, AT),
        (2, "r1", "down", None, None, "timeout", "late", {"code": 503}, None, AT + LATER),
        (3, "r1", "degraded", 200, 950.5, None, None, None, None, AT + timedelta(seconds=40)),
        # A region id that names no region: kept, under a region of its own.
        (4, "vanished", "up", 204, 3.0, None, None, None, None, AT + timedelta(seconds=60)),
    ]  # fmt: skip
    for row_id, region, status, code, ms, kind, error, evidence, days, at in rows:
        await session.execute(
            text(
                "INSERT INTO check_results (id, monitor_id, report_id, region_id, status, "
                "status_code, response_time_ms, error_kind, error, evidence, certificate_days, "
                "checked_at) VALUES (:id, :m, :report, :region, :status, :code, :ms, :kind, "
                ":error, :evidence, :days, :at)"
            ),
            {
                "id": row_id,
                "m": monitor_id,
                "report": uuid.uuid4().hex,
                "region": region,
                "status": status,
                "code": code,
                "ms": ms,
                "kind": kind,
                "error": error,
                "evidence": None if evidence is None else json.dumps(evidence),
                "days": days,
                "at": _stamp(at),
            },
        )
    await session.execute(
        text(
            "INSERT INTO check_timings (result_id, dns_ms, connect_ms, tls_ms, first_byte_ms, "
            "total_ms) VALUES (1, 1.5, 2.25, NULL, 10.0, 12.345678), "
            "(3, NULL, 0.001, 3.0, 900.0, 950.5)"
        )
    )


async def test_every_value_of_a_wide_result_survives_the_compact_row_and_the_way_back(
    fresh_engine: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    await migrate(fresh_engine, "0026")
    async with AsyncSession(fresh_engine, expire_on_commit=False) as session:
        project = await add_project(session, "Old", "old@example.com")
        monitor_id = await insert_early_monitor(session, project.id)
        await _old_rows(session, monitor_id)
        await session.commit()

    with caplog.at_level(logging.INFO, logger="upwatch.migrations"):
        await migrate(fresh_engine, "head")
    assert "4 of 4 converted" in caplog.text
    async with fresh_engine.connect() as connection:
        number = (
            await connection.execute(
                text("SELECT number FROM monitors WHERE id = :m"), {"m": monitor_id}
            )
        ).scalar_one()
        regions = dict((await connection.execute(text("SELECT code, number FROM regions"))).all())
        rows = (
            await connection.execute(
                text(
                    "SELECT monitor_number, region_number, checked_at_ms, status, status_code, "
                    "response_us, error_kind, error, certificate_days, dns_us, connect_us, "
                    "tls_us, first_byte_us, total_us FROM check_results "
                    "ORDER BY checked_at_ms"
                )
            )
        ).all()
    assert number == 1
    assert set(regions) == {"eu", "gone-vanished"}
    ms = epoch_ms(AT)
    eu, gone = regions["eu"], regions["gone-vanished"]
    assert [tuple(r) for r in rows] == [
        (1, eu, ms, 0, 200, 12346, None, None, 40, 1500, 2250, None, 10000, 12346),
        (1, eu, ms + 20000, 1, None, None, "timeout", "late", None, None, None, None, None, None),
        (1, eu, ms + 40000, 2, 200, 950500, None, None, None, None, 1, 3000, 900000, 950500),
        (1, gone, ms + 60000, 0, 204, 3000, None, None, None, None, None, None, None, None),
    ]  # fmt: skip

    # A monitor and a region made after the migration are numbered next.
    async with AsyncSession(fresh_engine) as session:
        other = await insert_early_monitor(session, project.id)
        await session.execute(
            text(
                "INSERT INTO regions (id, code, name, builtin, workers, created_at) "
                "VALUES ('r2', 'us', 'America', false, 0, :at)"
            ),
            {"at": _stamp(AT)},
        )
        await session.commit()
        assert (
            await session.execute(text("SELECT number FROM monitors WHERE id = :m"), {"m": other})
        ).scalar_one() == 2
        assert (
            await session.execute(text("SELECT number FROM regions WHERE id = 'r2'"))
        ).scalar_one() == 3

    await migrate(fresh_engine, "0026", down=True)
    async with fresh_engine.connect() as connection:
        back = (
            await connection.execute(
                text(
                    "SELECT c.region_id, c.status, c.status_code, c.response_time_ms, "
                    "c.error_kind, c.error, c.certificate_days, t.dns_ms, t.connect_ms, "
                    "t.total_ms FROM check_results c LEFT JOIN check_timings t "
                    "ON t.result_id = c.id ORDER BY c.checked_at"
                )
            )
        ).all()
    assert [tuple(r) for r in back] == [
        ("r1", "up", 200, 12.346, None, None, 40, 1.5, 2.25, 12.346),
        ("r1", "down", None, None, "timeout", "late", None, None, None, None),
        ("r1", "degraded", 200, 950.5, None, None, None, None, 0.001, 950.5),
        ("vanished", "up", 204, 3.0, None, None, None, None, None, None),
    ]


async def test_a_million_results_are_converted_in_batches_with_their_progress(
    fresh_engine: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    await migrate(fresh_engine, "0026")
    async with AsyncSession(fresh_engine) as session:
        project = await add_project(session, "Big", "big@example.com")
        monitors = [await insert_early_monitor(session, project.id) for _ in range(4)]
        await session.execute(
            text(
                "INSERT INTO regions (id, code, name, builtin, workers, created_at) "
                "VALUES ('r1', 'eu', 'Europe', false, 0, :at)"
            ),
            {"at": _stamp(AT)},
        )
        # Made by the database itself: a row a second for each monitor in turn, every
        # fifth one down, every third one timed.
        if BACKEND == "postgresql":
            series = "generate_series(1, :n) AS g(n)"
            at = "timestamptz '2026-01-01 00:00:00+00' + (n * interval '1 second')"
            report = "lpad(to_hex(n), 32, '0')"
        else:
            series = (
                "(WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < :n) "
                "SELECT n FROM g)"
            )
            at = "strftime('%Y-%m-%d %H:%M:%S', 1767225600 + n, 'unixepoch') || '.000000'"
            report = "printf('%032x', n)"
        monitor = (
            "CASE n % 4 "
            + " ".join(f"WHEN {i} THEN '{m}'" for i, m in enumerate(monitors))
            + " END"
        )
        await session.execute(
            text(
                "INSERT INTO check_results (id, monitor_id, report_id, region_id, status, "  # noqa: S608
                f"status_code, response_time_ms, checked_at) SELECT n, {monitor}, {report}, "
                "'r1', CASE WHEN n % 5 = 0 THEN 'down' ELSE 'up' END, "
                f"CASE WHEN n % 5 = 0 THEN NULL ELSE 200 END, (n % 1000) + 0.5, {at} "
                f"FROM {series}"
            ),
            {"n": BULK_ROWS},
        )
        await session.execute(
            text(
                "INSERT INTO check_timings (result_id, connect_ms, total_ms) "
                "SELECT id, 1.25, response_time_ms FROM check_results WHERE id % 3 = 0"
            )
        )
        await session.commit()

    with caplog.at_level(logging.INFO, logger="upwatch.migrations"):
        await migrate(fresh_engine, "head")
    progress = [r.getMessage() for r in caplog.records if "converted" in r.getMessage()]
    assert len(progress) == -(-BULK_ROWS // 50_000)  # one line a batch
    assert progress[-1] == f"check results: {BULK_ROWS} of {BULK_ROWS} converted to compact rows"
    async with fresh_engine.connect() as connection:
        total, down, timed, per_monitor = (
            await connection.execute(
                text(
                    "SELECT count(*), sum(CASE WHEN status = 1 THEN 1 ELSE 0 END), "
                    "sum(CASE WHEN connect_us = 1250 THEN 1 ELSE 0 END), "
                    "count(DISTINCT monitor_number) FROM check_results"
                )
            )
        ).one()
        last = (
            await connection.execute(
                text(
                    "SELECT checked_at_ms, response_us FROM check_results "
                    "ORDER BY checked_at_ms DESC LIMIT 1"
                )
            )
        ).one()
    assert (total, down, timed, per_monitor) == (BULK_ROWS, BULK_ROWS // 5, BULK_ROWS // 3, 4)
    assert tuple(last) == ((1767225600 + BULK_ROWS) * 1000, (BULK_ROWS % 1000) * 1000 + 500)
