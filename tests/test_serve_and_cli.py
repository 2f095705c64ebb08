"""The real service process: start on the embedded default, restart without loss, the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import BACKEND, PASSWORD, _empty_tables
from tests.live_server import LiveServer, clean_env, run_cli


@pytest.fixture
def service_env(database_url: str) -> Iterator[dict[str, str]]:
    """On SQLite nothing is configured at all: the embedded default under ./data is used."""
    if BACKEND == "sqlite":
        yield clean_env()
        return
    yield clean_env(UPWATCH_DATABASE_URL=database_url)
    asyncio.run(_empty_tables(database_url))


def test_serve_starts_the_api_and_data_and_tokens_survive_a_restart(
    tmp_path: Path, service_env: dict[str, str]
) -> None:
    server = LiveServer(tmp_path, service_env).start()
    try:
        signup = httpx.post(
            f"{server.url}/auth/signup", json={"email": "alice@example.com", "password": PASSWORD}
        )
        assert signup.status_code == 201
        token = signup.json()["access_token"]
    finally:
        server.stop()
    if BACKEND == "sqlite":
        assert (tmp_path / "data" / "upwatch.db").exists()
        assert (tmp_path / "data" / "secret_key").stat().st_mode & 0o077 == 0

    server = LiveServer(tmp_path, service_env).start()
    try:
        me = httpx.get(f"{server.url}/users/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200
        assert me.json()["email"] == "alice@example.com"
    finally:
        server.stop()


def test_admin_create_makes_a_first_administrator_who_can_list_users(
    tmp_path: Path, service_env: dict[str, str]
) -> None:
    migrated = run_cli(tmp_path, service_env, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    created = run_cli(
        tmp_path,
        service_env,
        "admin",
        "create",
        "--email",
        "Root@Example.com",
        "--password",
        PASSWORD,
        "--role",
        "super_admin",
    )
    assert created.returncode == 0, created.stderr
    assert "created super_admin root@example.com" in created.stdout

    server = LiveServer(tmp_path, service_env).start()
    try:
        login = httpx.post(
            f"{server.url}/auth/login", json={"email": "root@example.com", "password": PASSWORD}
        )
        assert login.status_code == 200
        assert "super_admin" in login.json()["user"]["roles"]
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        assert httpx.get(f"{server.url}/admin/users", headers=headers).status_code == 200
    finally:
        server.stop()


def test_admin_create_promotes_an_existing_account(
    tmp_path: Path, service_env: dict[str, str]
) -> None:
    run_cli(
        tmp_path, service_env, "admin", "create", "--email", "a@example.com", "--password", PASSWORD
    )
    again = run_cli(
        tmp_path,
        service_env,
        "admin",
        "create",
        "--email",
        "a@example.com",
        "--password",
        PASSWORD,
        "--role",
        "super_admin",
    )
    assert again.returncode == 0, again.stderr
    assert "promoted super_admin a@example.com" in again.stdout


def test_admin_create_refuses_a_short_password(tmp_path: Path, service_env: dict[str, str]) -> None:
    result = run_cli(
        tmp_path, service_env, "admin", "create", "--email", "a@example.com", "--password", "short"
    )
    assert result.returncode == 2
    assert "at least 8" in result.stderr
