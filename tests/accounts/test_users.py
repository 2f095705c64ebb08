"""Users: creation, profile, settings, deletion, and who may grant what (seed 3-6, contract §5)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest

from tests.conftest import PASSWORD, Account, Cast, SignUp, assert_problem
from tests.factories import change_profile, change_settings, log_in

Promote = Callable[[Account, str], Awaitable[None]]


async def test_post_users_creates_an_account_with_201(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/users",
        json={
            "email": "Carol@Example.com",
            "password": PASSWORD,
            "firstName": "Carol",
            "lastName": "C",
            "image": "https://example.com/c.png",
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert body["email"] == "carol@example.com"
    assert body["roles"] == ["user"]
    assert body["isEmailVerified"] is False
    assert body["isPasswordUser"] is True
    assert not {"password", "passwordHash", "password_hash"} & set(body)
    login = await log_in(client, "carol@example.com")
    assert login.status_code == 200


async def test_post_users_refuses_an_api_key_like_every_other_users_route(
    client: httpx.AsyncClient, cast: Cast, make_admin: Promote
) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    await make_admin(cast.alice, "admin")  # not even an administrator's key
    body = {"email": "dave@example.com", "password": PASSWORD}
    refused = assert_problem(await client.post("/users", headers=key, json=body), 403)
    assert refused == assert_problem(await client.get("/users/me", headers=key), 403)
    # Nothing was created: the address is still free.
    assert (await client.post("/users", json=body)).status_code == 201


async def test_an_unauthenticated_post_users_asking_for_admin_gets_403(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/users", json={"email": "mallory@example.com", "password": PASSWORD, "roles": ["admin"]}
    )
    assert_problem(response, 403)
    login = await log_in(client, "mallory@example.com")
    assert_problem(login, 401)


async def test_an_unauthenticated_post_users_claiming_verification_gets_403(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/users", json={"email": "m@example.com", "password": PASSWORD, "isEmailVerified": True}
    )
    assert_problem(response, 403)


async def test_a_plain_user_cannot_create_admins_through_post_users(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    bob = await sign_up("bob@example.com")
    response = await client.post(
        "/users",
        headers=bob.headers,
        json={"email": "m@example.com", "password": PASSWORD, "roles": ["user", "admin"]},
    )
    assert_problem(response, 403)


async def test_an_admin_may_create_a_verified_project_manager(
    client: httpx.AsyncClient, admin: Account
) -> None:
    response = await client.post(
        "/users",
        headers=admin.headers,
        json={
            "email": "pm@example.com",
            "password": PASSWORD,
            "roles": ["user", "project_manager"],
            "isEmailVerified": True,
        },
    )
    assert response.status_code == 201
    assert response.json()["roles"] == ["user", "project_manager"]
    assert response.json()["isEmailVerified"] is True


async def test_only_a_super_admin_may_grant_super_admin(
    client: httpx.AsyncClient, sign_up: SignUp, admin: Account, make_admin: Promote
) -> None:
    refused = await client.post(
        "/users", headers=admin.headers, json={"email": "s@example.com", "roles": ["super_admin"]}
    )
    assert_problem(refused, 403)
    root = await sign_up("root@example.com")
    await make_admin(root, "super_admin")
    granted = await client.post(
        "/users", headers=root.headers, json={"email": "s@example.com", "roles": ["super_admin"]}
    )
    assert granted.status_code == 201


async def test_post_users_with_an_invalid_token_is_a_401(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/users", headers={"Authorization": "Bearer nonsense"}, json={"email": "x@example.com"}
    )
    assert_problem(response, 401)


async def test_post_users_with_a_taken_email_is_a_409(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    await sign_up("alice@example.com")
    assert_problem(await client.post("/users", json={"email": "alice@example.com"}), 409)


async def test_post_users_rejects_an_unknown_role(client: httpx.AsyncClient) -> None:
    response = await client.post("/users", json={"email": "x@example.com", "roles": ["god"]})
    assert_problem(response, 422)


async def test_get_users_me_returns_the_profile(client: httpx.AsyncClient, sign_up: SignUp) -> None:
    alice = await sign_up("alice@example.com", firstName="Alice")
    body = (await client.get("/users/me", headers=alice.headers)).json()
    assert body["email"] == "alice@example.com"
    assert body["isPasswordUser"] is True
    assert body["settings"]["theme"] == "light"
    assert set(body["settings"]["notifications"]) == {"email", "sms", "slack", "webhook"}


async def test_users_me_needs_a_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/users/me")
    assert_problem(response, 401)
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_a_user_cannot_raise_its_own_roles(client: httpx.AsyncClient, alice: Account) -> None:
    for roles in (["user", "admin"], ["super_admin"], ["project_manager"]):
        response = await change_profile(client, alice, roles=roles)
        assert_problem(response, 403)
    me = (await client.get("/users/me", headers=alice.headers)).json()
    assert me["roles"] == ["user"]


async def test_a_user_cannot_verify_its_own_email(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await change_profile(client, alice, isEmailVerified=True)
    assert_problem(response, 403)
    assert (await client.get("/users/me", headers=alice.headers)).json()["isEmailVerified"] is False


async def test_sending_back_the_current_roles_unchanged_is_allowed(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await change_profile(client, alice, roles=["user"], firstName="Al")
    assert response.status_code == 200
    assert response.json()["firstName"] == "Al"


async def test_an_admin_may_change_its_own_roles_but_not_to_super_admin(
    client: httpx.AsyncClient, admin: Account
) -> None:
    ok = await change_profile(client, admin, roles=["user", "admin", "project_manager"])
    assert ok.status_code == 200
    assert ok.json()["roles"] == ["user", "admin", "project_manager"]
    refused = await change_profile(client, admin, roles=["admin", "super_admin"])
    assert_problem(refused, 403)


async def test_changing_email_needs_a_free_address_and_resets_verification(
    client: httpx.AsyncClient, sign_up: SignUp, alice: Account, make_admin: Promote
) -> None:
    await sign_up("bob@example.com")
    await make_admin(alice, "admin")
    verified = await change_profile(client, alice, isEmailVerified=True)
    assert verified.json()["isEmailVerified"] is True

    taken = await change_profile(client, alice, email="BOB@example.com")
    assert_problem(taken, 409)
    moved = await change_profile(client, alice, email="alice@new.example.com")
    assert moved.status_code == 200
    assert moved.json()["email"] == "alice@new.example.com"
    assert moved.json()["isEmailVerified"] is False


async def test_a_user_cannot_carry_verification_over_to_a_new_address(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await change_profile(client, alice, email="other@example.com", isEmailVerified=True)
    assert_problem(response, 403)


async def test_changing_the_password_revokes_every_token(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await change_profile(client, alice, password="another good one")
    assert response.status_code == 200
    assert_problem(await client.get("/users/me", headers=alice.headers), 401)
    refresh = await client.post("/auth/refresh", json={"refresh_token": alice.refresh_token})
    assert_problem(refresh, 401)
    login = await log_in(client, alice.email, "another good one")
    assert login.status_code == 200


async def test_profile_settings_and_user_settings_are_one_record(
    client: httpx.AsyncClient, alice: Account
) -> None:
    profile = await change_profile(
        client,
        alice,
        settings={
            "theme": "dark",
            "notifications": {"slack": True},
            "slackConfig": {"webhookUrl": "https://hooks.slack.com/services/T0/B0/x"},
        },
    )
    assert profile.status_code == 200
    assert profile.json()["settings"]["theme"] == "dark"
    assert profile.json()["settings"]["notifications"]["email"] is True

    settings = await change_settings(
        client, alice, timezone="Europe/Paris", notifications={"teams": True}
    )
    assert settings.status_code == 200
    body = settings.json()
    assert body["theme"] == "dark"
    assert body["timezone"] == "Europe/Paris"
    assert body["notifications"] == {
        "email": True,
        "slack": True,
        "discord": False,
        "teams": True,
        "webhook": False,
        "rocketchat": False,
        "googlechat": False,
        "ntfy": False,
        "gotify": False,
        "pushover": False,
    }
    assert body["slackConfig"] == {"webhookUrl": "https://hooks.slack.com/****"}  # masked
    assert body["language"] == "en"


async def test_user_settings_may_be_wrapped_in_a_settings_object(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await change_settings(client, alice, settings={"language": "ja", "theme": "dark"})
    assert response.status_code == 200
    assert (response.json()["language"], response.json()["theme"]) == ("ja", "dark")
    again = await client.get("/users/settings", headers=alice.headers)
    assert again.json()["language"] == "ja"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"language": "xx"}, "language"),
        ({"theme": "blue"}, "theme"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": "utc+2"}, "timezone"),
        ({"preferredNotification": "carrier-pigeon"}, "preferredNotification"),
        ({"notifications": {"email": "sometimes"}}, "notifications.email"),
        ({"slackConfig": "not an object"}, "slackConfig"),
    ],
)
async def test_user_settings_are_checked_against_the_seed_value_sets(
    client: httpx.AsyncClient, alice: Account, body: dict[str, object], field: str
) -> None:
    response = await client.put("/users/settings", headers=alice.headers, json=body)
    problem = assert_problem(response, 422)
    assert field in [e["field"] for e in problem["errors"]]


async def test_user_settings_need_a_token(client: httpx.AsyncClient) -> None:
    assert_problem(await client.put("/users/settings", json={"theme": "dark"}), 401)


async def test_deleting_the_account_answers_200_and_its_tokens_stop_working(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.delete("/users/me", headers=alice.headers)
    assert response.status_code == 200
    assert response.json() == {"id": alice.id, "deleted": True}

    assert_problem(await client.get("/users/me", headers=alice.headers), 401)
    refresh = await client.post("/auth/refresh", json={"refresh_token": alice.refresh_token})
    assert_problem(refresh, 401)
    login = await log_in(client, alice.email)
    assert_problem(login, 401)
    again = await client.post("/auth/signup", json={"email": alice.email, "password": PASSWORD})
    assert again.status_code == 201


async def test_deleting_one_account_leaves_others_alone(
    client: httpx.AsyncClient, sign_up: SignUp, alice: Account
) -> None:
    bob = await sign_up("bob@example.com")
    await client.delete("/users/me", headers=alice.headers)
    assert (await client.get("/users/me", headers=bob.headers)).status_code == 200
