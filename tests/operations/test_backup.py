"""`upwatch backup` and `upwatch restore`, the real commands beside a real `upwatch serve`: a
consistent copy of a running SQLite service, restored into a fresh data directory."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from tests.conftest import PASSWORD, WAIT_SECONDS
from tests.factories import bearer
from tests.live_server import LiveServer, ThreadedTarget, clean_env, run_cli
from upwatch.migrations import alembic_config
from upwatch.operations.backup import known_revisions

# Processes and files only: no test database fixture, so one backend's pass covers them.
# Long, and needs no test database: run in the shorter lane (scripts/test).
pytestmark = [pytest.mark.db_independent, pytest.mark.second_lane]

MONITORS = 6
# The free plan, allowing checks every 10 s (the shortest interval) and this many monitors.
PLANS = f"[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = {MONITORS}\n"


def read(path: Path, sql: str) -> list[Any]:
    """The first column of each row ``sql`` gives, read without writing to the file."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as database:
        return [row[0] for row in database.execute(sql)]


def hidden(directory: Path) -> list[str]:
    """Files left beside a copy: staged ones are named ``.NAME.*.tmp``."""
    return sorted(path.name for path in directory.iterdir() if path.name.startswith("."))


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def monitors(api: httpx.Client, headers: dict[str, str]) -> list[dict[str, Any]]:
    listing = api.get("/monitors", headers=headers)
    assert listing.status_code == 200, listing.text
    return list(listing.json())


def until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``, up to UPWATCH_TEST_WAIT_SECONDS (a bound, not a speed check)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def test_backup_during_checks_restores_to_a_fresh_data_dir_serving_the_same_monitors(
    tmp_path: Path,
) -> None:
    plans = tmp_path / "plans.toml"
    plans.write_text(PLANS)
    env = clean_env(UPWATCH_ALLOW_PRIVATE_TARGETS="true", UPWATCH_PLANS_FILE=str(plans))
    live, fresh, copy = tmp_path / "live", tmp_path / "fresh", tmp_path / "upwatch-backup.db"
    live.mkdir()
    fresh.mkdir()
    account = {"email": "ops@example.com", "password": PASSWORD}

    with ThreadedTarget() as target:
        server = LiveServer(live, env).start()
        try:
            with httpx.Client(base_url=server.url) as api:
                headers = bearer(api.post("/auth/signup", json=account), 201)
                project = api.post("/projects", headers=headers, json={"name": "Shop"})
                assert project.status_code == 201, project.text
                for n in range(MONITORS):
                    made = api.post(
                        "/monitors",
                        headers=headers,
                        json={
                            "projectId": project.json()["id"],
                            "name": f"page {n}",
                            "type": "http",
                            "url": f"{target.base}/{n}",
                            "intervalSeconds": 10,
                        },
                    )
                    assert made.status_code == 201, made.text

                # The first results are in and the others are due: the backup runs while the
                # service writes them (to its WAL, not yet all copied into the database file).
                until(lambda: any(monitor["lastCheckedAt"] for monitor in monitors(api, headers)))
                before = monitors(api, headers)
                assert (live / "data" / "upwatch.db-wal").stat().st_size > 0

                backed_up = run_cli(live, env, "backup", str(copy))
                assert backed_up.returncode == 0, backed_up.stderr
                assert f"{MONITORS} monitors, 1 user; integrity ok" in backed_up.stdout

                # Its database open, the running service keeps it: restore will not replace it.
                in_use = run_cli(live, env, "restore", "--force", str(copy))
                assert in_use.returncode == 2
                assert "in use: stop `upwatch serve`" in in_use.stderr
        finally:
            server.stop()

        assert mode(copy) == 0o600
        assert read(copy, "PRAGMA integrity_check") == ["ok"]
        assert read(copy, "SELECT count(*) FROM check_results")[0] >= 1
        assert hidden(tmp_path) == []  # the staged file was renamed into place

        restored = run_cli(fresh, env, "restore", str(copy))
        assert restored.returncode == 0, restored.stderr
        assert f"{MONITORS} monitors, 1 user; integrity ok" in restored.stdout
        database = fresh / "data" / "upwatch.db"
        assert read(database, "PRAGMA integrity_check") == ["ok"]
        assert (mode(database.parent), mode(database)) == (0o700, 0o600)

        server = LiveServer(fresh, env).start()
        try:
            with httpx.Client(base_url=server.url) as api:
                # A fresh data directory has a new secret key: the same account signs in again.
                headers = bearer(api.post("/auth/login", json=account))
                after = monitors(api, headers)
        finally:
            server.stop()

    def identity(monitor: dict[str, Any]) -> tuple[str, str, str, int]:
        return monitor["id"], monitor["name"], monitor["url"], monitor["intervalSeconds"]

    assert sorted(map(identity, after)) == sorted(map(identity, before))


def test_backup_refuses_to_replace_an_existing_file_unless_forced(tmp_path: Path) -> None:
    env = clean_env()
    migrated = run_cli(tmp_path, env, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    existing = tmp_path / "backup.db"
    existing.write_text("last week's backup")

    refused = run_cli(tmp_path, env, "backup", "backup.db")
    assert refused.returncode == 2
    assert "backup.db exists: give --force to replace it" in refused.stderr
    assert existing.read_text() == "last week's backup"

    forced = run_cli(tmp_path, env, "backup", "--force", "backup.db")
    assert forced.returncode == 0, forced.stderr
    assert read(existing, "PRAGMA integrity_check") == ["ok"]
    assert mode(existing) == 0o600


def test_backup_refuses_a_directory_others_may_write_unless_it_is_sticky(tmp_path: Path) -> None:
    # Another user there could swap the temporary copy for a link between its creation and
    # SQLite opening it, and receive the whole database.
    env = clean_env()
    assert run_cli(tmp_path, env, "migrate").returncode == 0
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    refused = run_cli(tmp_path, env, "backup", "shared/copy.db")
    assert refused.returncode == 2
    assert "writable by other users" in refused.stderr
    assert list(shared.iterdir()) == []
    shared.chmod(0o1777)  # as /tmp: no one may rename another's file there
    done = run_cli(tmp_path, env, "backup", "shared/copy.db")
    assert done.returncode == 0, done.stderr


def test_restore_refuses_a_backup_whose_schema_is_newer_than_this_version_knows(
    tmp_path: Path,
) -> None:
    env = clean_env()
    migrated = run_cli(tmp_path, env, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    newer = tmp_path / "newer.db"
    with (
        closing(sqlite3.connect(tmp_path / "data" / "upwatch.db")) as source,
        closing(sqlite3.connect(newer)) as copy,
    ):
        source.backup(copy)
        copy.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
        copy.commit()
    fresh = tmp_path / "fresh"
    fresh.mkdir()

    refused = run_cli(fresh, env, "restore", str(newer))
    assert refused.returncode == 2
    assert "schema revision ffffffffffff" in refused.stderr
    assert "from a newer Upwatch" in refused.stderr
    assert list((fresh / "data").iterdir()) == []  # neither the database nor a staged copy


def test_restore_takes_an_older_schema_and_says_the_next_start_upgrades_it(
    tmp_path: Path,
) -> None:
    _, head = known_revisions()
    newest = ScriptDirectory.from_config(alembic_config()).get_revision(head)
    assert newest is not None
    assert isinstance(newest.down_revision, str)
    previous = newest.down_revision
    # A database one migration behind, as the Upwatch before this one left it.
    older = tmp_path / "older.db"
    engine = create_engine(f"sqlite:///{older}")
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), previous)
    engine.dispose()
    env = clean_env()

    restored = run_cli(tmp_path, env, "restore", str(older))
    assert restored.returncode == 0, restored.stderr
    assert f"schema {previous} is older than this version's {head}" in restored.stdout
    assert "upgraded on the next start" in restored.stdout
    migrated = run_cli(tmp_path, env, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert read(tmp_path / "data" / "upwatch.db", "SELECT version_num FROM alembic_version") == [
        head
    ]

    # A second restore would replace what is there now: only when told to.
    again = run_cli(tmp_path, env, "restore", str(older))
    assert again.returncode == 2
    assert "exists: stop the service, then give --force" in again.stderr


def test_backup_and_restore_on_postgresql_name_pg_dump_and_pg_restore_without_the_password(
    tmp_path: Path,
) -> None:
    # Nothing listens at this address: the commands answer from the URL alone.
    env = clean_env(
        UPWATCH_DATABASE_URL="postgresql://upwatch:pa55-word@db.invalid:5433/upwatch_prod"
    )

    dump = run_cli(tmp_path, env, "backup", "upwatch.dump")
    assert dump.returncode == 2
    assert (
        "pg_dump --format=custom --host=db.invalid --port=5433 --username=upwatch "
        "--dbname=upwatch_prod --file=upwatch.dump"
    ) in dump.stderr

    restore = run_cli(tmp_path, env, "restore", "upwatch.dump")
    assert restore.returncode == 2
    assert "pg_restore --clean --if-exists --no-owner --host=db.invalid" in restore.stderr
    assert "--dbname=upwatch_prod upwatch.dump" in restore.stderr

    assert "pa55-word" not in dump.stdout + dump.stderr + restore.stdout + restore.stderr
    assert list(tmp_path.iterdir()) == []  # no file, no data directory
