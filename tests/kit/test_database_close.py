"""Closing the database closes every connection, the ones still in use included."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.pool import QueuePool
from sqlalchemy.util.concurrency import greenlet_spawn

from tests.conftest import make_settings
from upwatch.kit.db import Database


async def test_a_connection_in_use_when_the_database_closes_is_closed_once_it_comes_back(
    database_url: str, tmp_path: Path
) -> None:
    db = Database(make_settings(database_url, tmp_path))
    pool = db.engine.sync_engine.pool
    assert isinstance(pool, QueuePool)
    connection = await db.engine.connect()
    await connection.execute(text("SELECT 1"))
    closing = asyncio.create_task(db.dispose())
    await asyncio.sleep(0)  # let dispose start: it must wait for the connection
    assert not closing.done()
    await connection.close()
    await closing
    # Returned before the pool was discarded, so the pool closed it; returned after, it would
    # sit in the discarded pool, open, until the garbage collector found it.
    assert pool.checkedin() == 0
    assert pool.checkedout() == 0


async def test_a_connection_never_returned_is_named_and_does_not_hold_the_close_forever(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = Database(make_settings(database_url, tmp_path))
    pool = db.engine.sync_engine.pool
    connection = await db.engine.connect()
    await connection.execute(text("SELECT 1"))
    with caplog.at_level(logging.WARNING, logger="upwatch.kit.db"):
        await db.dispose(settle_seconds=0.05)
    assert "closing the database with 1 connections still in use" in caplog.text
    await connection.close()
    # It went back to the discarded pool, where nothing would close it: the leak the wait
    # prevents.
    assert isinstance(pool, QueuePool)
    assert pool.checkedin() == 1
    await greenlet_spawn(pool.dispose)  # a driver that awaits its close needs the greenlet
