"""Registration, login, token rotation and revocation, password reset (seed 1-2, contract §4)."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from tests.conftest import PASSWORD, Mailbox, SignUp, assert_problem
from tests.factories import log_in, reset_password
from upwatch.kit.clock import ManualClock


async def test_signup_answers_201_with_tokens_and_the_user(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/auth/signup",
        json={
            "email": "  Alice@Example.COM ",
            "password": PASSWORD,
            "firstName": "Alice",
            "lastName": "Liddell",
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) >= {"access_token", "refresh_token", "user"}
    assert body["user"] == {
        "id": body["user"]["id"],
        "email": "alice@example.com",
        "roles": ["user"],
        "firstName": "Alice",
        "lastName": "Liddell",
        "image": "",
    }
    me = await client.get("/users/me", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert me.status_code == 200
    assert me.json()["email"] == "alice@example.com"


async def test_signup_with_a_taken_email_is_a_conflict(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    await sign_up("alice@example.com")
    response = await client.post(
        "/auth/signup", json={"email": "ALICE@example.com", "password": PASSWORD}
    )
    assert_problem(response, 409)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "not-an-address", "password": PASSWORD}, "email"),
        ({"email": "a@example.com", "password": "short"}, "password"),
        ({"email": "a@example.com", "password": "x" * 129}, "password"),
        ({"password": PASSWORD}, "email"),
        ({"email": "a@example.com", "password": PASSWORD, "firstName": 7}, "firstName"),
    ],
)
async def test_signup_rejects_invalid_fields_with_422_naming_each_field(
    client: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    problem = assert_problem(await client.post("/auth/signup", json=body), 422)
    assert field in [e["field"] for e in problem["errors"]]


async def test_a_body_that_is_not_json_is_a_400(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/auth/signup", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400)


async def test_a_body_that_is_not_an_object_is_a_400(client: httpx.AsyncClient) -> None:
    assert_problem(await client.post("/auth/signup", json=["a", "b"]), 400)


async def test_login_returns_the_signup_shape(client: httpx.AsyncClient, sign_up: SignUp) -> None:
    account = await sign_up("alice@example.com")
    response = await log_in(client, "Alice@example.com")
    assert response.status_code == 200
    body = response.json()
    assert body["user"]["id"] == account.id
    assert body["access_token"]
    assert body["refresh_token"]


async def test_login_gives_the_same_401_for_unknown_email_and_wrong_password(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    await sign_up("alice@example.com")
    wrong = await log_in(client, "alice@example.com", "x")
    unknown = await log_in(client, "nobody@example.com")
    first, second = assert_problem(wrong, 401), assert_problem(unknown, 401)
    assert first == second
    assert wrong.headers["WWW-Authenticate"] == "Bearer"


async def test_login_is_throttled_after_ten_failures_even_for_the_right_password(
    client: httpx.AsyncClient, sign_up: SignUp, clock: ManualClock
) -> None:
    await sign_up("alice@example.com")
    for _ in range(10):
        await log_in(client, "alice@example.com", "nope")
    blocked = await log_in(client, "alice@example.com")
    assert_problem(blocked, 429)
    assert int(blocked.headers["Retry-After"]) > 0
    clock.advance(timedelta(minutes=16))
    allowed = await log_in(client, "alice@example.com")
    assert allowed.status_code == 200


async def test_login_is_throttled_per_client_address_across_accounts(
    client: httpx.AsyncClient,
) -> None:
    for n in range(10):
        await log_in(client, f"u{n}@example.com", "x")
    response = await log_in(client, "other@example.com", "x")
    assert_problem(response, 429)


async def test_an_oauth_style_account_cannot_log_in_with_a_password(
    client: httpx.AsyncClient,
) -> None:
    created = await client.post(
        "/users", json={"email": "oauth@example.com", "provider": "github", "providerId": "42"}
    )
    assert created.status_code == 201
    assert created.json()["isPasswordUser"] is False
    response = await log_in(client, "oauth@example.com", "")
    assert_problem(response, 401)


async def test_refresh_rotates_the_refresh_token(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    account = await sign_up("alice@example.com")
    response = await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    assert response.status_code == 200
    pair = response.json()
    assert pair["refresh_token"] != account.refresh_token
    me = await client.get("/users/me", headers={"Authorization": f"Bearer {pair['access_token']}"})
    assert me.status_code == 200


async def test_a_used_refresh_token_cannot_be_replayed_and_its_successor_dies_with_it(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    account = await sign_up("alice@example.com")
    first = await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    successor = first.json()["refresh_token"]

    replay = await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    assert_problem(replay, 401)
    after = await client.post("/auth/refresh", json={"refresh_token": successor})
    assert_problem(after, 401)


async def test_a_replay_does_not_touch_other_logins_of_the_same_account(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    account = await sign_up("alice@example.com")
    other = (await log_in(client, account.email)).json()
    await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    still = await client.post("/auth/refresh", json={"refresh_token": other["refresh_token"]})
    assert still.status_code == 200


async def test_an_unknown_or_expired_refresh_token_is_a_401(
    client: httpx.AsyncClient, sign_up: SignUp, clock: ManualClock
) -> None:
    assert_problem(await client.post("/auth/refresh", json={"refresh_token": "nope"}), 401)
    account = await sign_up("alice@example.com")
    clock.advance(timedelta(days=31))
    expired = await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    assert_problem(expired, 401)


async def test_logout_ends_the_refresh_token(client: httpx.AsyncClient, sign_up: SignUp) -> None:
    account = await sign_up("alice@example.com")
    response = await client.post("/auth/logout", json={"refresh_token": account.refresh_token})
    assert response.status_code == 200
    assert response.json()["message"]
    refused = await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    assert_problem(refused, 401)


async def test_an_access_token_expires_after_fifteen_minutes(
    client: httpx.AsyncClient, sign_up: SignUp, clock: ManualClock
) -> None:
    account = await sign_up("alice@example.com")
    clock.advance(timedelta(minutes=14))
    assert (await client.get("/users/me", headers=account.headers)).status_code == 200
    clock.advance(timedelta(minutes=2))
    assert_problem(await client.get("/users/me", headers=account.headers), 401)


@pytest.mark.parametrize(
    "header",
    ["Bearer not-a-jwt", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer eyJhbGciOiJub25lIn0.e30."],
)
async def test_malformed_credentials_are_a_401_with_a_bearer_challenge(
    client: httpx.AsyncClient, header: str
) -> None:
    response = await client.get("/users/me", headers={"Authorization": header})
    assert_problem(response, 401)
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_the_reset_email_arrives_over_smtp_and_its_link_works_once(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox
) -> None:
    account = await sign_up("alice@example.com")
    response = await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
    assert response.status_code == 200
    await mailbox.wait_for("alice@example.com")
    token = mailbox.reset_token("alice@example.com")

    reset = await reset_password(client, token, "a brand new secret")
    assert reset.status_code == 200
    assert reset.json()["message"]
    again = await reset_password(client, token, "yet another secret")
    assert_problem(again, 400)

    login = await log_in(client, account.email, "a brand new secret")
    assert login.status_code == 200


async def test_tokens_stop_working_after_a_password_reset(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox
) -> None:
    account = await sign_up("alice@example.com")
    await client.post("/auth/forgot-password", json={"email": account.email})
    await mailbox.wait_for(account.email)
    token = mailbox.reset_token(account.email)
    await reset_password(client, token, "new secret!")

    assert_problem(await client.get("/users/me", headers=account.headers), 401)
    refresh = await client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
    assert_problem(refresh, 401)


async def test_a_reset_token_expires_after_an_hour(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox, clock: ManualClock
) -> None:
    account = await sign_up("alice@example.com")
    await client.post("/auth/forgot-password", json={"email": account.email})
    await mailbox.wait_for(account.email)
    token = mailbox.reset_token(account.email)
    clock.advance(timedelta(minutes=61))
    response = await reset_password(client, token, "too late now")
    assert_problem(response, 400)


async def test_forgot_password_answers_the_same_for_unknown_addresses_and_sends_nothing(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox
) -> None:
    await sign_up("alice@example.com")
    known = await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
    unknown = await client.post("/auth/forgot-password", json={"email": "ghost@example.com"})
    assert known.status_code == unknown.status_code == 200
    assert known.json() == unknown.json()
    await mailbox.wait_for("alice@example.com")
    assert mailbox.to("ghost@example.com") == []


async def test_reset_password_with_an_unknown_token_is_a_400(client: httpx.AsyncClient) -> None:
    response = await reset_password(client, "made-up", "whatever123")
    assert_problem(response, 400)


async def test_reset_password_validates_the_new_password(client: httpx.AsyncClient) -> None:
    response = await reset_password(client, "made-up", "short")
    problem = assert_problem(response, 422)
    assert problem["errors"][0]["field"] == "newPassword"


async def test_nobody_writes_a_single_sign_on_subject_onto_an_account_by_hand(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    """Single sign-on finds accounts by provider subject: a person who set a victim's subject
    on their own account would receive the victim's next sign-in through the provider."""
    subject = {"provider": "oidc", "providerId": "victim-subject@https://id.example"}
    created = await client.post(
        "/users", json={"email": "mallory@example.com", "password": "pass-1234-word", **subject}
    )
    assert_problem(created, 403)
    mallory = await sign_up("mallory@example.com")
    changed = await client.put("/users/me", headers=mallory.headers, json=subject)
    assert_problem(changed, 403)
    upper = await client.put(
        "/users/me", headers=mallory.headers, json={**subject, "provider": " OIDC "}
    )
    assert_problem(upper, 403)
    # Other providers' fields stay the person's own, as before.
    other = await client.put(
        "/users/me", headers=mallory.headers, json={"provider": "github", "providerId": "42"}
    )
    assert other.status_code == 200, other.text
