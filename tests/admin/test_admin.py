"""The admin listing of every account (seed 20)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest

from tests.conftest import Account, SignUp, assert_problem

Promote = Callable[[Account, str], Awaitable[None]]


async def test_the_admin_listing_needs_a_token(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/admin/users"), 401)


async def test_the_admin_listing_is_forbidden_to_plain_users(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    bob = await sign_up("bob@example.com")
    assert_problem(await client.get("/admin/users", headers=bob.headers), 403)


@pytest.mark.parametrize("role", ["admin", "super_admin"])
async def test_admins_see_every_account_with_its_subscription(
    client: httpx.AsyncClient, sign_up: SignUp, make_admin: Promote, role: str
) -> None:
    admin = await sign_up("admin@example.com")
    await make_admin(admin, role)
    await sign_up("alice@example.com", firstName="Alice", lastName="L")
    await client.post("/users", json={"email": "oauth@example.com"})

    response = await client.get("/admin/users", headers=admin.headers)
    assert response.status_code == 200
    assert response.headers["X-Total-Count"] == "3"
    items = {item["email"]: item for item in response.json()}
    assert set(items) == {"admin@example.com", "alice@example.com", "oauth@example.com"}
    alice = items["alice@example.com"]
    assert alice["subscription"] == "free"
    assert alice["subscriptionStatus"] == "active"
    assert alice["firstName"] == "Alice"
    assert alice["roles"] == ["user"]
    assert alice["createdAt"].endswith("Z")
    assert "password" not in str(response.json())


async def test_the_admin_listing_pages_with_limit_and_offset(
    client: httpx.AsyncClient, sign_up: SignUp, admin: Account
) -> None:
    for n in range(4):
        await sign_up(f"user{n}@example.com")
    first = await client.get("/admin/users?limit=2", headers=admin.headers)
    second = await client.get("/admin/users?limit=2&offset=2", headers=admin.headers)
    assert first.headers["X-Total-Count"] == "5"
    ids = [u["id"] for u in first.json()] + [u["id"] for u in second.json()]
    assert len(set(ids)) == 4
    assert_problem(await client.get("/admin/users?limit=0", headers=admin.headers), 422)
    assert_problem(await client.get("/admin/users?limit=1001", headers=admin.headers), 422)


async def test_an_admin_sets_another_accounts_roles_and_plan(
    client: httpx.AsyncClient, sign_up: SignUp, admin: Account
) -> None:
    bob = await sign_up("bob@example.com")
    response = await client.patch(
        f"/admin/users/{bob.id}",
        headers=admin.headers,
        json={
            "roles": ["user", "project_manager"],
            "plan": "pro",
            "subscriptionStatus": "trialing",
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["roles"], body["subscription"], body["subscriptionStatus"]) == (
        ["user", "project_manager"],
        "pro",
        "trialing",
    )
    current = await client.get("/subscriptions/current", headers=bob.headers)
    assert (current.json()["currentPlan"], current.json()["status"]) == ("pro", "trialing")


async def test_admin_user_updates_check_who_asks_and_what(
    client: httpx.AsyncClient, sign_up: SignUp, admin: Account
) -> None:
    bob = await sign_up("bob@example.com")
    url = f"/admin/users/{bob.id}"
    assert_problem(await client.patch(url, json={"plan": "pro"}), 401)
    assert_problem(await client.patch(url, headers=bob.headers, json={"plan": "pro"}), 403)
    assert_problem(
        await client.patch("/admin/users/nobody", headers=admin.headers, json={"plan": "pro"}), 404
    )
    assert_problem(await client.patch(url, headers=admin.headers, json={"plan": "gold"}), 422)
    assert_problem(
        await client.patch(url, headers=admin.headers, json={"subscriptionStatus": "lapsed"}), 422
    )


async def test_only_a_super_admin_grants_or_changes_super_admin(
    client: httpx.AsyncClient, sign_up: SignUp, admin: Account, make_admin: Promote
) -> None:
    root = await sign_up("root@example.com")
    await make_admin(root, "super_admin")
    bob = await sign_up("bob@example.com")
    grant = await client.patch(
        f"/admin/users/{bob.id}", headers=admin.headers, json={"roles": ["super_admin"]}
    )
    assert_problem(grant, 403)
    demote = await client.patch(
        f"/admin/users/{root.id}", headers=admin.headers, json={"roles": ["user"]}
    )
    assert_problem(demote, 403)
    granted = await client.patch(
        f"/admin/users/{bob.id}", headers=root.headers, json={"roles": ["user", "super_admin"]}
    )
    assert granted.status_code == 200
