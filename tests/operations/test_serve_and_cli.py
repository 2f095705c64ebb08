"""The real service process: start on the embedded default, restart without loss, the CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import BACKEND, PASSWORD
from tests.live_server import LiveServer, ThreadedTarget, run_cli


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


def test_checks_resume_on_schedule_after_the_service_restarts(
    tmp_path: Path, service_env: dict[str, str]
) -> None:
    import time

    target = ThreadedTarget().start()
    plans = tmp_path / "plans.toml"
    plans.write_text("[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = 5\n")
    env = {**service_env, "UPWATCH_ALLOW_PRIVATE_TARGETS": "true", "UPWATCH_PLANS_FILE": str(plans)}

    def checked_at(url: str, headers: dict[str, str], ids: list[str]) -> dict[str, str | None]:
        return {
            m: httpx.get(f"{url}/monitors/{m}", headers=headers).json()["lastCheckedAt"]
            for m in ids
        }

    def wait_until(condition: Callable[[], bool], within: float) -> None:
        deadline = time.monotonic() + within
        while not condition():
            assert time.monotonic() < deadline, "not reached in time"
            time.sleep(0.5)

    server = LiveServer(tmp_path, env).start()
    try:
        signup = httpx.post(
            f"{server.url}/auth/signup", json={"email": "ops@example.com", "password": PASSWORD}
        )
        headers = {"Authorization": f"Bearer {signup.json()['access_token']}"}
        project = httpx.post(f"{server.url}/projects", headers=headers, json={"name": "P"}).json()
        ids = [
            httpx.post(
                f"{server.url}/monitors",
                headers=headers,
                json={
                    "projectId": project["id"],
                    "name": f"m{n}",
                    "type": "http",
                    "url": f"{target.base}/{n}",
                    "intervalSeconds": 10,
                },
            ).json()["id"]
            for n in range(3)
        ]
        wait_until(lambda: all(checked_at(server.url, headers, ids).values()), within=20)
        before = checked_at(server.url, headers, ids)
    finally:
        server.stop()

    server = LiveServer(tmp_path, env).start()
    try:
        listing = httpx.get(f"{server.url}/monitors", headers=headers).json()
        assert sorted(m["id"] for m in listing) == sorted(ids)
        # Each monitor is checked again within about one interval of its last check.
        wait_until(
            lambda: all(
                now != before[m] for m, now in checked_at(server.url, headers, ids).items()
            ),
            within=25,
        )
        statuses = {
            m["status"] for m in httpx.get(f"{server.url}/monitors", headers=headers).json()
        }
        assert statuses == {"up"}
    finally:
        server.stop()
        target.stop()
