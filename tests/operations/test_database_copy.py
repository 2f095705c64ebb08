"""Moving a service from the embedded SQLite to PostgreSQL with `upwatch copy-data`: a real
service's data, checks and an incident included, copied by the real command and served by a
second `upwatch serve` on PostgreSQL, which keeps checking where the first stopped."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.conftest import PASSWORD, POSTGRES_URL, WAIT_SECONDS, _postgres_admin, free_port
from tests.factories import FAST_PLANS, bearer
from tests.live_server import LiveServer, ThreadedTarget, clean_env, run_cli
from upwatch.config import async_database_url
from upwatch.operations.database_copy import _tables

# Long, and needs no test database: run in the shorter lane (scripts/test).
pytestmark = [pytest.mark.db_independent, pytest.mark.second_lane]


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards."""
    name = f"upwatch_copy_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_postgres_admin(f'CREATE DATABASE "{name}"'))
    except OSError as exc:
        reason = f"PostgreSQL not reachable at {POSTGRES_URL}: {exc}"
        if os.environ.get("UPWATCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    base, _, _ = POSTGRES_URL.rpartition("/")
    yield f"{base}/{name}"
    asyncio.run(_postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def row_counts(url: str) -> dict[str, int]:
    engine = create_async_engine(async_database_url(url))
    try:
        async with engine.connect() as connection:
            return {
                table.name: int(await connection.scalar(select(func.count()).select_from(table)))
                for table in _tables()
            }
    finally:
        await engine.dispose()


async def sequences_behind(url: str) -> list[str]:
    """Tables whose serial id sequence would hand out an id already taken."""
    engine = create_async_engine(async_database_url(url))
    behind = []
    try:
        async with engine.connect() as connection:
            for table in _tables():
                (key, *more) = table.primary_key.columns
                if more or key.autoincrement is not True:
                    continue
                sequence = await connection.scalar(
                    text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": key.name}
                )
                if sequence is None:
                    continue
                largest = await connection.scalar(select(func.max(key)))
                last, called = (
                    await connection.execute(
                        text(f"SELECT last_value, is_called FROM {sequence}")  # noqa: S608
                    )
                ).one()
                following = last + 1 if called else last
                if largest is not None and following <= largest:
                    behind.append(table.name)
    finally:
        await engine.dispose()
    return behind


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {WAIT_SECONDS} s"
        time.sleep(0.2)


def test_a_sqlite_service_moves_to_postgresql_whole_and_keeps_checking_there(
    tmp_path: Path, postgres_database: str
) -> None:
    plans = tmp_path / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = clean_env(UPWATCH_PLANS_FILE=str(plans), UPWATCH_ALLOW_PRIVATE_TARGETS="true")
    sqlite_url = f"sqlite:///{tmp_path / 'data' / 'upwatch.db'}"
    with ThreadedTarget() as target:
        first = LiveServer(tmp_path, env).start()
        try:
            with httpx.Client(base_url=first.url, timeout=30) as api:
                signup = api.post(
                    "/auth/signup", json={"email": "mover@example.com", "password": PASSWORD}
                )
                headers = bearer(signup, 201)
                project = api.post("/projects", headers=headers, json={"name": "Shop"})
                project_id = project.json()["id"]
                for name, url in (
                    ("Shop", f"{target.base}/health"),
                    ("Gone", f"http://127.0.0.1:{free_port()}/"),  # refused: down, an incident
                ):
                    made = api.post(
                        "/monitors",
                        headers=headers,
                        json={
                            "projectId": project_id,
                            "name": name,
                            "type": "http",
                            "url": url,
                            "intervalSeconds": 10,
                        },
                    )
                    assert made.status_code == 201, made.text
                page = api.post(
                    "/status-pages",
                    headers=headers,
                    json={"projectId": project_id, "name": "Shop", "slug": "shop"},
                )
                assert page.status_code == 201, page.text
                wait_until(
                    lambda: api.get("/incidents", headers=headers).json(), "the incident opened"
                )
                wait_until(
                    lambda: all(
                        m["status"] != "pending"
                        for m in api.get("/monitors", headers=headers).json()
                    ),
                    "both monitors checked",
                )
                monitors = api.get("/monitors", headers=headers).json()
        finally:
            first.stop()

        before = asyncio.run(row_counts(sqlite_url))
        assert before["check_results"] >= 2
        copied = run_cli(tmp_path, env, "copy-data", "--to", postgres_database)
        assert copied.returncode == 0, copied.stderr
        assert "check_results:" in copied.stdout
        assert asyncio.run(row_counts(postgres_database)) == before
        # Every serial id continues after the largest copied one.
        assert asyncio.run(sequences_behind(postgres_database)) == []

        again = run_cli(tmp_path, env, "copy-data", "--to", postgres_database)
        assert again.returncode == 2
        assert "is not empty" in again.stderr

        second = LiveServer(tmp_path, {**env, "UPWATCH_DATABASE_URL": postgres_database}).start()
        try:
            with httpx.Client(base_url=second.url, timeout=30) as api:
                login = api.post(
                    "/auth/login", json={"email": "mover@example.com", "password": PASSWORD}
                )
                headers = bearer(login)
                assert api.get("/monitors", headers=headers).json() == monitors
                assert api.get("/s/shop").status_code == 200
                # New results take ids after the copied ones (the sequences moved past them).
                wait_until(
                    lambda: (
                        asyncio.run(row_counts(postgres_database))["check_results"]
                        > before["check_results"] + 2
                    ),
                    "new checks stored on PostgreSQL",
                )
            assert "duplicate key" not in second.log.read_text()
        finally:
            second.stop()


def test_copy_data_refuses_a_target_with_tables_before_changing_it_and_never_echoes_a_password(
    tmp_path: Path, postgres_database: str
) -> None:
    env = clean_env()
    assert run_cli(tmp_path, env, "migrate").returncode == 0

    async def foreign_table(statement: str) -> list[str]:
        engine = create_async_engine(async_database_url(postgres_database))
        try:
            async with engine.begin() as connection:
                await connection.execute(text(statement))
                return list(
                    await connection.scalars(
                        text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                    )
                )
        finally:
            await engine.dispose()

    asyncio.run(foreign_table("CREATE TABLE customers (id int)"))
    refused = run_cli(tmp_path, env, "copy-data", "--to", postgres_database)
    assert refused.returncode == 2
    assert "customers" in refused.stderr
    assert asyncio.run(foreign_table("SELECT 1")) == ["customers"]  # nothing was migrated there

    broken = run_cli(
        tmp_path, env, "copy-data", "--to", "postgresql://u:p@ss:Hunter2@127.0.0.1:5432/db"
    )
    assert broken.returncode == 2
    assert "Hunter2" not in broken.stderr + broken.stdout
    assert "percent-encoded" in broken.stderr
    unreachable = run_cli(
        tmp_path, env, "copy-data", "--to", "postgresql://u:Hunter2@127.0.0.1:1/db"
    )
    assert unreachable.returncode == 1
    assert "upwatch: copy-data failed, nothing was copied" in unreachable.stderr
    assert "Hunter2" not in unreachable.stderr + unreachable.stdout
