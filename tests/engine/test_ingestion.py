"""The ingester under failure: the database goes away mid-ingestion, a commit is lost on its way
back, two ingesters write the same day. Every result is stored exactly once and counted once."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlalchemy.orm import Session

from tests.conftest import BACKEND, eventually, make_settings
from tests.engine.conftest import REGION, day_totals, report, rows_per_report
from tests.tcp_proxy import TcpProxy
from upwatch.engine.broker import CheckReport, MemoryBroker
from upwatch.engine.ingester import Ingester
from upwatch.engine.status import MonitorStatus, decode_state
from upwatch.kit.db import Database, WorkSession
from upwatch.kit.metrics import Metrics
from upwatch.models import Monitor

# These tests cut connections on purpose (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("collect_cut_connections")


class Outage:
    """Takes the database away from one ``Database`` (the ingester's) and brings it back.

    PostgreSQL: the ingester connects through a proxy of the test's own, which cuts its
    connections and then refuses new ones. SQLite: another connection holds the write lock
    (``BEGIN EXCLUSIVE``) and the ingester's busy timeout is short, so every write fails with
    "database is locked"; making the file read-only would not do, tests may run as root.
    """

    def __init__(self, database_url: str, tmp_path: Path) -> None:
        self.database_url = database_url
        self.tmp_path = tmp_path
        self.proxy: TcpProxy | None = None
        self.blocker: sqlite3.Connection | None = None

    def database(self) -> Database:
        url = self.database_url
        if BACKEND == "postgresql":
            parts = urlsplit(url)
            self.proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
            self.proxy.start()
            url = self.proxy.url_for(url)
        database = Database(make_settings(url, self.tmp_path))
        if BACKEND == "sqlite":

            def short_busy_timeout(connection: Any, _record: Any) -> None:
                cursor = connection.cursor()
                cursor.execute("PRAGMA busy_timeout=50")
                cursor.close()

            event.listen(database.engine.sync_engine, "connect", short_busy_timeout)
        return database

    async def take_away(self) -> None:
        if self.proxy is not None:
            self.proxy.cut()
            self.proxy.refuse()
            return
        path = self.database_url.removeprefix("sqlite:///")
        self.blocker = sqlite3.connect(
            path, timeout=10, isolation_level=None, check_same_thread=False
        )
        # In a thread: it may wait for the ingester's transaction in flight to end.
        await asyncio.to_thread(self.blocker.execute, "BEGIN EXCLUSIVE")

    async def bring_back(self) -> None:
        if self.proxy is not None:
            self.proxy.restore()
        elif self.blocker is not None:
            self.blocker.execute("ROLLBACK")
            self.blocker.close()
            self.blocker = None

    def close(self) -> None:
        if self.blocker is not None:
            self.blocker.close()
        if self.proxy is not None:
            self.proxy.stop()


@pytest.fixture
def outage(database_url: str, tmp_path: Path) -> Iterator[Outage]:
    taken = Outage(database_url, tmp_path / "ingester")
    yield taken
    taken.close()


@contextlib.asynccontextmanager
async def running(ingester: Ingester) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(ingester.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await ingester.db.dispose()


def fast_retries(db: Database, broker: MemoryBroker, metrics: Metrics | None = None) -> Ingester:
    return Ingester(
        db,
        broker,
        lambda: (REGION,),
        max_batch=20,
        max_wait=0.01,
        metrics=metrics,
        retry_first_seconds=0.02,
        retry_max_seconds=0.2,
    )


async def test_results_published_while_the_database_is_away_are_all_stored_once_it_is_back(
    db: Database, monitor_ids: list[str], outage: Outage
) -> None:
    broker = MemoryBroker(max_results=50)
    metrics = Metrics()
    ingester = fast_retries(outage.database(), broker, metrics)
    reports = [report(monitor_ids[i % 3], ok=i % 7 != 0) for i in range(160)]
    async with running(ingester) as task:
        for item in reports[:30]:
            await broker.publish_result(item)
        await eventually(lambda: ingester.written == 30)

        await outage.take_away()
        publishing = asyncio.create_task(_publish(broker, reports[30:]))
        # 50 queued and a batch of 20 in the ingester's hands: the other 60 results wait in
        # the workers (back-pressure) rather than in memory without bound.
        await eventually(lambda: ingester.failures >= 3 and broker.depth()["results"] == 50)
        assert not publishing.done()
        assert not task.done()
        assert len(ingester.pending) == 20
        assert metrics.registry.get_sample_value("upwatch_results_pending") == 20
        assert metrics.registry.get_sample_value("upwatch_ingest_failures_total") >= 3

        await outage.bring_back()
        await publishing
        await eventually(lambda: ingester.written == len(reports), within=30)
        assert metrics.registry.get_sample_value("upwatch_results_pending") == 0

    stored = await rows_per_report(db, reports)
    assert stored == {r.id: 1 for r in reports}
    timed = sum(1 for r in reports if r.outcome.response_time_ms is not None)
    assert await day_totals(db) == (len(reports), timed, timed)


async def _publish(broker: MemoryBroker, reports: list[CheckReport]) -> None:
    for item in reports:
        await broker.publish_result(item)


class CommitAnswerLost(ConnectionError):
    """What the driver raises when the connection drops after the server committed."""


async def test_a_batch_retried_after_its_commit_answer_was_lost_is_stored_and_counted_once(
    db: Database, monitor_ids: list[str], database_url: str, tmp_path: Path
) -> None:
    # Sessions of a class of their own, so the lost answer affects the ingester alone: the
    # first commit reaches the database, then the caller sees the connection fail.
    class LosesFirstCommitAnswer(Session):
        pass

    lost: list[bool] = []

    @event.listens_for(LosesFirstCommitAnswer, "after_commit")
    def drop_the_answer(_session: Session) -> None:
        if not lost:
            lost.append(True)
            raise CommitAnswerLost("connection closed while committing")

    database = Database(make_settings(database_url, tmp_path / "ingester"))
    database.worksession = async_sessionmaker(
        database.engine,
        expire_on_commit=False,
        class_=WorkSession,
        sync_session_class=LosesFirstCommitAnswer,
    )
    broker = MemoryBroker()
    ingester = fast_retries(database, broker)
    failing = [report(monitor_ids[0], ok=False) for _ in range(5)]
    passing = [report(monitor_ids[1]) for _ in range(5)]
    async with running(ingester):
        for item in failing + passing:
            await broker.publish_result(item)
        # Once the answer was lost: an empty queue and no pending batch also hold while the
        # ingester is taking the reports from the queue, before it stored anything.
        await eventually(
            lambda: bool(lost) and not ingester.pending and broker.depth()["results"] == 0
        )
    assert lost
    assert ingester.failures == 1

    assert await rows_per_report(db, failing + passing) == {r.id: 1 for r in failing + passing}
    assert await day_totals(db) == (10, 5, 5)
    async with db.sessionmaker() as session:
        down = await session.get(Monitor, monitor_ids[0])
        assert down is not None
        state = decode_state(down)
    # Each failure moved the status machine once: five in a row, not ten.
    assert state.status is MonitorStatus.DOWN
    assert state.regions[REGION].consecutive_failures == 5


async def test_ingesting_the_same_reports_again_stores_and_counts_nothing_more(
    db: Database, monitor_ids: list[str]
) -> None:
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    reports = [report(monitor_ids[i % 3]) for i in range(12)]
    first = await ingester.ingest(reports)
    again = await ingester.ingest(reports[::-1] + reports[:3])
    assert first == [r.id for r in reports]
    assert again == []
    assert await rows_per_report(db, reports) == {r.id: 1 for r in reports}
    assert await day_totals(db) == (12, 12, 12)


async def test_a_result_from_a_region_the_monitor_is_not_checked_in_is_not_stored(
    db: Database, monitor_ids: list[str]
) -> None:
    async with db.sessionmaker() as session:
        monitor = await session.get(Monitor, monitor_ids[0])
        assert monitor is not None
        monitor.region_ids = [REGION]
        await session.commit()
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION, "elsewhere"))
    ours, foreign = report(monitor_ids[0]), report(monitor_ids[0], ok=False)
    foreign = dataclasses.replace(foreign, region_id="elsewhere")
    assert await ingester.ingest([ours, foreign]) == [ours.id]
    assert ingester.foreign == 1
    assert await rows_per_report(db, [ours, foreign]) == {ours.id: 1, foreign.id: 0}


async def test_two_ingesters_writing_the_same_days_never_lose_a_count(
    db: Database, monitor_ids: list[str], database_url: str, tmp_path: Path
) -> None:
    brokers = [MemoryBroker(), MemoryBroker()]
    ingesters = [
        fast_retries(Database(make_settings(database_url, tmp_path / f"i{n}")), broker)
        for n, broker in enumerate(brokers)
    ]
    reports = [report(monitor_ids[i % 3], ok=i % 5 != 0) for i in range(400)]
    async with running(ingesters[0]), running(ingesters[1]):
        # Interleaved: both write the same monitors' same day at the same time.
        await asyncio.gather(*(_publish(b, reports[n::2]) for n, b in enumerate(brokers)))
        await eventually(lambda: sum(i.written for i in ingesters) == len(reports), within=60)

    assert await rows_per_report(db, reports) == {r.id: 1 for r in reports}
    timed = sum(1 for r in reports if r.outcome.response_time_ms is not None)
    assert await day_totals(db) == (len(reports), timed, timed)


async def test_a_success_that_arrives_after_a_newer_failure_does_not_resolve_its_incident(
    db: Database, monitor_ids: list[str]
) -> None:
    # A scheduled check and a "check now" of the same monitor: the check started first is
    # stored last (seen in a browser test: an incident opened and resolved in the same second).
    earlier, newer = report(monitor_ids[0]), report(monitor_ids[0], ok=False)
    assert earlier.checked_at < newer.checked_at
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    assert await ingester.ingest([newer]) == [newer.id]
    assert await ingester.ingest([earlier]) == [earlier.id]
    async with db.sessionmaker() as session:
        monitor = await session.get(Monitor, monitor_ids[0])
        assert monitor is not None
        state = decode_state(monitor)
        assert monitor.last_checked_at is not None
        assert monitor.last_checked_at.timestamp() == newer.checked_at.timestamp()
    assert state.status is MonitorStatus.DOWN
    assert state.open_incident
    assert await rows_per_report(db, [earlier, newer]) == {earlier.id: 1, newer.id: 1}


async def test_a_worker_clock_far_ahead_does_not_make_later_checks_look_late(
    db: Database, monitor_ids: list[str]
) -> None:
    # Results are ordered by when they were due (the scheduler's clock), not by the time a
    # worker wrote on them.
    skewed = dataclasses.replace(
        report(monitor_ids[0]), checked_at=report(monitor_ids[0]).checked_at + timedelta(days=1)
    )
    failing = report(monitor_ids[0], ok=False)
    ingester = Ingester(db, MemoryBroker(), lambda: (REGION,))
    assert await ingester.ingest([skewed]) == [skewed.id]
    assert await ingester.ingest([failing]) == [failing.id]
    async with db.sessionmaker() as session:
        monitor = await session.get(Monitor, monitor_ids[0])
        assert monitor is not None
        state = decode_state(monitor)
    assert state.status is MonitorStatus.DOWN
    assert state.open_incident
