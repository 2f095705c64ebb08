"""API keys through the HTTP API: shown once, listed without the secret, and walls: a read key
cannot write (403), a key reaches its own project only (404 elsewhere), never account, billing,
membership or admin routes (403), and a revoked or expired key is refused (401)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import create_monitor
from tests.maintenance.test_windows import iso as iso_z
from upwatch.kit.clock import ManualClock
from upwatch.models import User
from upwatch.runtime import Runtime

settings_overrides = overriding(allow_private_targets=True)


async def make_key(
    client: httpx.AsyncClient, cast: Cast, scope: str = "write", **fields: Any
) -> dict[str, Any]:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": f"CI {scope}", "scope": scope, **fields},
    )
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


def bearer(key: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {key['key']}"}


async def test_a_key_is_shown_once_and_works_in_its_project(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    key = await make_key(client, cast)
    assert key["key"].startswith("upw_")
    assert key["prefix"] == key["key"][:12]
    assert (key["scope"], key["projectId"], key["lastUsedAt"]) == ("write", cast.project_id, None)
    monitor = await client.post(
        "/monitors",
        headers=bearer(key),
        json={
            "projectId": cast.project_id,
            "name": "From CI",
            "type": "http",
            "url": "http://127.0.0.1:9/",
            "intervalSeconds": 300,
        },
    )
    assert monitor.status_code == 201, monitor.text
    listed = await client.get(f"/projects/{cast.project_id}/api-keys", headers=cast.bob.headers)
    (shown,) = listed.json()
    assert "key" not in shown
    assert shown["lastUsedAt"] is not None
    assert [p["id"] for p in (await client.get("/projects", headers=bearer(key))).json()] == [
        cast.project_id
    ]


async def test_a_read_key_reads_but_cannot_write(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    key = await make_key(client, cast, scope="read")
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    read = await client.get(f"/monitors/{monitor['id']}", headers=bearer(key))
    assert read.status_code == 200, read.text
    for method, path, body in (
        ("PATCH", f"/monitors/{monitor['id']}", {"name": "x"}),
        ("DELETE", f"/monitors/{monitor['id']}", None),
        ("POST", "/incidents", {"projectId": cast.project_id, "title": "x"}),
    ):
        refused = await client.request(method, path, headers=bearer(key), json=body)
        assert "read API key" in assert_problem(refused, 403)["detail"]


async def test_a_key_reaches_no_other_project_and_no_person_route(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime
) -> None:
    key = await make_key(client, cast)
    other = await client.post("/projects", headers=cast.charlie.headers, json={"name": "C"})
    foreign = await create_monitor(
        client, cast.charlie, other.json()["id"], url="http://127.0.0.1:9/", intervalSeconds=300
    )
    assert_problem(await client.get(f"/projects/{other.json()['id']}", headers=bearer(key)), 404)
    assert_problem(await client.get(f"/monitors/{foreign['id']}", headers=bearer(key)), 404)
    assert (await client.get("/monitors", headers=bearer(key))).json() == []
    for method, path in (
        ("GET", "/users/me"),
        ("PUT", "/users/settings"),
        ("GET", "/subscriptions/current"),
        ("POST", "/subscriptions/upgrade"),
        ("GET", "/retention/notifications"),
        ("POST", "/projects"),
        ("DELETE", f"/projects/{cast.project_id}"),
        ("POST", f"/projects/{cast.project_id}/users"),
        ("POST", f"/projects/{cast.project_id}/api-keys"),
        ("GET", f"/projects/{cast.project_id}/api-keys"),
    ):
        refused = await client.request(method, path, headers=bearer(key), json={})
        assert_problem(refused, 403)
    # Even when the project's owner is an administrator, the key is not one: no admin route,
    # and no other project by id (which an administrator's own token reaches).
    async with runtime.db.sessionmaker() as session:
        owner = await session.get(User, cast.alice.id)
        assert owner is not None
        owner.roles = ["user", "admin"]
        await session.commit()
    assert (await client.get("/admin/users", headers=cast.alice.headers)).status_code == 200
    assert_problem(await client.get("/admin/users", headers=bearer(key)), 403)
    assert_problem(await client.get(f"/projects/{other.json()['id']}", headers=bearer(key)), 404)


async def test_a_revoked_or_expired_key_is_refused(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    key = await make_key(client, cast)
    path = f"/projects/{cast.project_id}/api-keys/{key['id']}"
    assert_problem(await client.delete(path, headers=cast.bob.headers), 403)  # not a manager
    assert_problem(await client.delete(path, headers=cast.charlie.headers), 404)
    revoked = await client.delete(path, headers=cast.alice.headers)
    assert revoked.json() == {"id": key["id"], "deleted": True}
    assert_problem(await client.get("/monitors", headers=bearer(key)), 401)
    assert_problem(await client.delete(path, headers=cast.alice.headers), 404)

    soon = await make_key(client, cast, expiresAt=iso_z(clock.now() + timedelta(minutes=5)))
    assert (await client.get("/monitors", headers=bearer(soon))).status_code == 200
    clock.advance(timedelta(minutes=5))
    assert (
        "expired"
        in assert_problem(await client.get("/monitors", headers=bearer(soon)), 401)["detail"]
    )
    assert_problem(await client.get("/monitors", headers={"Authorization": "Bearer upw_x"}), 401)


async def test_who_makes_keys_and_what_a_key_must_say(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    path = f"/projects/{cast.project_id}/api-keys"
    assert_problem(await client.post(path, json={"name": "x", "scope": "read"}), 401)
    made = await client.post(path, headers=cast.bob.headers, json={"name": "x", "scope": "read"})
    assert_problem(made, 403)  # a member who does not manage the project
    for body, field in (
        ({"name": "x", "scope": "admin"}, "scope"),
        ({"name": "", "scope": "read"}, "name"),
        ({"name": "x", "scope": "read", "expiresAt": "2020-01-01T00:00:00Z"}, "expiresAt"),
    ):
        refused = await client.post(path, headers=cast.alice.headers, json=body)
        assert field in assert_problem(refused, 422)["detail"]
