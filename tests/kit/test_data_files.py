"""The embedded default's data directory and SQLite files are private to the service's user."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import PASSWORD, lifespan, make_settings
from upwatch.app import create_app

Started = Callable[[Path], AbstractAsyncContextManager[httpx.AsyncClient]]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def warnings_about(caplog: pytest.LogCaptureFixture, path: Path) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.getMessage().startswith(f"{path} has mode")
    ]


@pytest.fixture
def started() -> Started:
    """The app on the embedded default (no database URL) with ``data_dir``, migrated on start."""

    @asynccontextmanager
    async def start(data_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
        settings = make_settings("", data_dir, migrate_on_start=True)
        app = create_app(settings)
        async with lifespan(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as c:
                yield c

    return start


async def test_a_fresh_start_creates_the_data_directory_0700_and_every_database_file_0600(
    started: Started, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    async with started(data) as client:
        signup = await client.post(
            "/auth/signup", json={"email": "alice@example.com", "password": PASSWORD}
        )
        assert signup.status_code == 201, signup.text
        database = data / "upwatch.db"
        # While the service runs in WAL mode, SQLite keeps the -wal and -shm files beside it.
        files = [database, data / "upwatch.db-wal", data / "upwatch.db-shm"]
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
        assert mode(data) == 0o700
    assert not [r for r in caplog.records if " has mode " in r.getMessage()]


async def test_an_existing_database_file_others_can_read_is_kept_and_warned_about(
    started: Started, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    database = data / "upwatch.db"
    database.touch()
    os.chmod(database, 0o644)
    async with started(data):
        pass
    [warning] = warnings_about(caplog, database)
    assert "644" in warning
    assert f"chmod 600 {database}" in warning
    # The operator's choice stands: the service warns, it does not change the mode.
    assert mode(database) == 0o644


async def test_an_existing_data_directory_others_can_read_is_warned_about(
    started: Started, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o755)  # noqa: S103 - the setup under test
    async with started(data):
        pass
    [warning] = warnings_about(caplog, data)
    assert f"chmod 700 {data}" in warning
    assert warnings_about(caplog, data / "upwatch.db") == []
