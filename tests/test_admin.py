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
    client: httpx.AsyncClient, sign_up: SignUp, make_admin: Promote
) -> None:
    admin = await sign_up("admin@example.com")
    await make_admin(admin, "admin")
    for n in range(4):
        await sign_up(f"user{n}@example.com")
    first = await client.get("/admin/users?limit=2", headers=admin.headers)
    second = await client.get("/admin/users?limit=2&offset=2", headers=admin.headers)
    assert first.headers["X-Total-Count"] == "5"
    ids = [u["id"] for u in first.json()] + [u["id"] for u in second.json()]
    assert len(set(ids)) == 4
    assert_problem(await client.get("/admin/users?limit=0", headers=admin.headers), 422)
    assert_problem(await client.get("/admin/users?limit=1001", headers=admin.headers), 422)
