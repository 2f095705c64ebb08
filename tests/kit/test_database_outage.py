"""A database that cannot be reached answers 503 with Retry-After, logged once per outage.

PostgreSQL outages go through a TCP proxy of the test's own (``tests/tcp_proxy.py``): the
machine's server is never stopped. SQLite outages move the database file's directory away.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event, text
from sqlalchemy.engine import make_url

from tests.conftest import (
    BACKEND,
    PASSWORD,
    Account,
    SmtpServer,
    assert_problem,
    eventually,
    lifespan,
    make_settings,
)
from tests.factories import log_in
from tests.tcp_proxy import TcpProxy, proxy_to
from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.dependencies import Session
from upwatch.kit.clock import ManualClock
from upwatch.kit.errors import DATABASE_RETRY_AFTER_SECONDS
from upwatch.runtime import Runtime

# These tests cut connections on purpose (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("collect_cut_connections")

OUTAGE = "database unreachable"
RECOVERY = "database reachable again"


def lines(caplog: pytest.LogCaptureFixture, start: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith(start)]


def unhandled(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "unhandled error"]


def assert_unavailable(response: httpx.Response) -> None:
    body = assert_problem(response, 503)
    assert body["type"].endswith("/unavailable")
    assert response.headers["Retry-After"] == str(DATABASE_RETRY_AFTER_SECONDS)


async def some_requests(client: httpx.AsyncClient, alice: Account) -> list[httpx.Response]:
    """A sign-up, a login and a list (authentication reads the database first)."""
    return [
        await client.post("/auth/signup", json={"email": "bob@example.com", "password": PASSWORD}),
        await log_in(client, alice.email),
        await client.get("/projects", headers=alice.headers),
    ]


@pytest.mark.skipif(BACKEND != "postgresql", reason="the proxy stands before PostgreSQL")
class TestWhenPostgresqlGoesAway:
    @pytest.fixture
    def proxy(self, database_url: str) -> Iterator[TcpProxy]:
        server = make_url(database_url)
        with proxy_to(server.host or "127.0.0.1", server.port or 5432) as proxy:
            yield proxy

    @pytest.fixture
    def settings(
        self, database_url: str, tmp_path: Path, smtp: SmtpServer, proxy: TcpProxy
    ) -> Settings:
        return make_settings(
            proxy.url_for(database_url), tmp_path, smtp_host="127.0.0.1", smtp_port=smtp.port
        )

    async def test_every_request_answers_503_with_retry_after_while_connections_are_refused(
        self,
        client: httpx.AsyncClient,
        alice: Account,
        proxy: TcpProxy,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        proxy.refuse()
        for _ in range(3):
            for response in await some_requests(client, alice):
                assert_unavailable(response)
        assert len(lines(caplog, OUTAGE)) == 1
        assert unhandled(caplog) == []

    async def test_requests_succeed_again_once_the_database_is_back_and_the_recovery_is_logged(
        self,
        client: httpx.AsyncClient,
        alice: Account,
        proxy: TcpProxy,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        proxy.refuse()
        assert_unavailable((await some_requests(client, alice))[2])
        proxy.restore()
        signup, login, listing = await some_requests(client, alice)
        assert (signup.status_code, login.status_code, listing.status_code) == (201, 200, 200)
        assert len(lines(caplog, OUTAGE)) == 1
        assert len(lines(caplog, RECOVERY)) == 1

    async def test_after_a_restart_cut_the_pool_reconnects_and_no_request_answers_500(
        self,
        client: httpx.AsyncClient,
        alice: Account,
        proxy: TcpProxy,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        before = proxy.connections
        proxy.cut()
        statuses = []
        for _ in range(3):
            statuses += [r.status_code for r in await some_requests(client, alice)]
        assert set(statuses) <= {200, 201, 409, 503}, statuses
        listing = await client.get("/projects", headers=alice.headers)
        assert listing.status_code == 200
        assert proxy.connections > before
        assert unhandled(caplog) == []

    @pytest.mark.parametrize("failing", ["statement", "commit"])
    async def test_a_connection_cut_inside_a_request_answers_503_and_the_next_request_reconnects(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        alice: Account,
        proxy: TcpProxy,
        caplog: pytest.LogCaptureFixture,
        failing: str,
    ) -> None:

        async def cut_midway(session: Session) -> None:
            await session.execute(text("SELECT 1"))
            proxy.cut()
            if failing == "statement":
                await session.execute(text("SELECT 1"))

        app.add_api_route("/cut-midway", cut_midway)
        assert_unavailable(await client.get("/cut-midway"))
        assert len(lines(caplog, OUTAGE)) == 1
        listing = await client.get("/projects", headers=alice.headers)
        assert listing.status_code == 200
        assert len(lines(caplog, RECOVERY)) == 1
        assert unhandled(caplog) == []

    async def test_a_query_cancelled_midway_stays_a_cancellation_not_an_outage(
        self, runtime: Runtime, database_url: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        async def sleep_in_the_database() -> None:
            async with runtime.db.sessionmaker() as session:
                await session.execute(text("SELECT pg_sleep(30)"))

        async def sleeping() -> bool:
            watcher = await asyncpg.connect(database_url)
            try:
                waiting = await watcher.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'"
                )
            finally:
                await watcher.close()
            return bool(waiting)

        task = asyncio.create_task(sleep_in_the_database())
        await eventually(sleeping)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert lines(caplog, OUTAGE) == []


class TestWhenTheSqliteFileCannotBeOpened:
    @pytest.fixture
    def live(self, tmp_path: Path) -> Path:
        directory = tmp_path / "live"
        directory.mkdir()
        return directory

    @pytest.fixture
    async def app(self, tmp_path: Path, live: Path) -> AsyncIterator[FastAPI]:
        settings = make_settings(
            f"sqlite:///{live / 'upwatch.db'}", tmp_path / "data", migrate_on_start=True
        )
        application = create_app(settings, ManualClock(datetime.now(UTC)))
        async with lifespan(application):
            yield application

    async def test_requests_answer_503_while_the_database_file_is_gone_and_succeed_after(
        self,
        app: FastAPI,
        client: httpx.AsyncClient,
        alice: Account,
        runtime: Runtime,
        live: Path,
        tmp_path: Path,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        moved = await asyncio.to_thread(live.rename, tmp_path / "moved")
        # Open connections keep the moved file; new ones find no directory to open it in.
        await runtime.db.dispose()
        for response in await some_requests(client, alice):
            assert_unavailable(response)
        # Connections opened before the move still work, so a background role's statement may
        # end the outage and the next failure start another: each says what happened.
        outages = lines(caplog, OUTAGE)
        assert outages
        assert all("unable to open database file" in o.getMessage() for o in outages)

        await asyncio.to_thread(moved.rename, live)
        listing = await client.get("/projects", headers=alice.headers)
        assert listing.status_code == 200
        assert unhandled(caplog) == []


async def test_an_sql_error_that_is_a_bug_still_answers_500_with_a_logged_stack(
    app: FastAPI, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(session: Session) -> None:
        await session.execute(text("SELECT no_such_column FROM no_such_table"))

    app.add_api_route("/broken", broken)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as client:
        response = await client.get("/broken")
    assert_problem(response, 500)
    [record] = unhandled(caplog)
    assert record.exc_info is not None
    assert lines(caplog, OUTAGE) == []


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's write lock: PostgreSQL locks rows")
async def test_a_write_lock_held_past_the_busy_timeout_answers_503_busy_and_is_no_outage(
    app: FastAPI, runtime: Runtime, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    def short_busy_timeout(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA busy_timeout=50")
        cursor.close()

    event.listen(runtime.db.engine.sync_engine, "connect", short_busy_timeout)
    await runtime.db.dispose()  # the pool's connections take the short timeout

    async def write(session: Session) -> None:
        await session.execute(text("CREATE TABLE busy_scratch (x INTEGER)"))

    app.add_api_route("/write", write, methods=["POST"])
    blocker = sqlite3.connect(
        database_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
    )
    try:
        # Another writer, as ingestion at a high rate. Taken from a thread: waiting for the
        # lock on the loop would stop a background role from ending the transaction that
        # holds it (a clean-clone run failed with "database is locked" that way).
        await asyncio.to_thread(blocker.execute, "BEGIN EXCLUSIVE")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as c:
            response = await c.post("/write")
            body = assert_problem(response, 503)
            assert body["type"].endswith("/unavailable")
            assert body["detail"].startswith("the database is busy")
            assert response.headers["Retry-After"] == "1"
            assert not runtime.db.reachability.is_down
            assert lines(caplog, OUTAGE) == []

            blocker.execute("ROLLBACK")
            assert (await c.post("/write")).status_code == 200
    finally:
        blocker.close()
