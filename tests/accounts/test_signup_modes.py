"""UPWATCH_SIGNUP: open (the default, covered everywhere else), invite and closed."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import PASSWORD, Mailbox, assert_problem
from tests.factories import bearer, log_in
from upwatch.operations.bootstrap import create_admin
from upwatch.runtime import Runtime

SIGNUP_CLOSED = "https://upwatch.dev/problems/signup-closed"


async def admin_headers(client: httpx.AsyncClient, runtime: Runtime) -> dict[str, str]:
    """The operator's way in when nobody may sign up: `upwatch admin create`."""
    await create_admin(runtime.settings, "root@example.com", PASSWORD, "admin")
    login = await log_in(client, "root@example.com")
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}


@pytest.mark.parametrize("settings_overrides", [{"signup": "closed"}])
async def test_a_closed_service_refuses_sign_up_and_anonymous_account_creation_with_403(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    signup = await client.post(
        "/auth/signup", json={"email": "eve@example.com", "password": PASSWORD}
    )
    assert assert_problem(signup, 403)["type"] == SIGNUP_CLOSED
    created = await client.post("/users", json={"email": "eve@example.com", "password": PASSWORD})
    assert assert_problem(created, 403)["type"] == SIGNUP_CLOSED
    login = await log_in(client, "eve@example.com")
    assert login.status_code == 401  # nothing was created

    # An administrator still creates accounts, and they log in.
    headers = await admin_headers(client, runtime)
    made = await client.post(
        "/users", headers=headers, json={"email": "eve@example.com", "password": PASSWORD}
    )
    assert made.status_code == 201, made.text
    login = await log_in(client, "eve@example.com")
    assert login.status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"signup": "closed"}])
async def test_a_closed_service_refuses_an_account_created_by_a_signed_in_non_admin(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    headers = await admin_headers(client, runtime)
    await client.post(
        "/users", headers=headers, json={"email": "bob@example.com", "password": PASSWORD}
    )
    login = await log_in(client, "bob@example.com")
    bob = {"Authorization": f"Bearer {login.json()['access_token']}"}
    created = await client.post(
        "/users", headers=bob, json={"email": "mallory@example.com", "password": PASSWORD}
    )
    assert assert_problem(created, 403)["type"] == SIGNUP_CLOSED


@pytest.mark.parametrize("settings_overrides", [{"signup": "invite"}])
async def test_an_invite_only_service_takes_a_sign_up_only_with_a_project_invitation(
    client: httpx.AsyncClient, runtime: Runtime, mailbox: Mailbox
) -> None:
    uninvited = await client.post(
        "/auth/signup", json={"email": "dave@example.com", "password": PASSWORD}
    )
    problem = assert_problem(uninvited, 403)
    assert problem["type"] == SIGNUP_CLOSED
    assert "invitationToken" in problem["detail"]

    headers = await admin_headers(client, runtime)
    await client.post(
        "/users", headers=headers, json={"email": "alice@example.com", "password": PASSWORD}
    )
    login = await log_in(client, "alice@example.com")
    alice = {"Authorization": f"Bearer {login.json()['access_token']}"}
    project = await client.post("/projects", headers=alice, json={"name": "Shop"})
    invited = await client.post(
        f"/projects/{project.json()['id']}/users", headers=alice, json={"email": "dave@example.com"}
    )
    assert invited.status_code == 201, invited.text
    await mailbox.wait_for("dave@example.com")

    forged = await client.post(
        "/auth/signup",
        json={"email": "dave@example.com", "password": PASSWORD, "invitationToken": "forged"},
    )
    assert_problem(forged, 422)
    joined = await client.post(
        "/auth/signup",
        json={
            "email": "dave@example.com",
            "password": PASSWORD,
            "invitationToken": mailbox.invitation_token("dave@example.com"),
        },
    )
    dave = bearer(joined, 201)
    projects = await client.get("/projects", headers=dave)
    assert [p["id"] for p in projects.json()] == [project.json()["id"]]
