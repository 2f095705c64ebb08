"""The sessions list: API logins and console sign-ins, seen and ended by their owner alone
(docs/sessions.md)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import PASSWORD, Account, SignUp, assert_problem
from tests.console.forms import signed_in
from upwatch.kit.clock import ManualClock


@asynccontextmanager
async def client_at(app: FastAPI, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client calling from ``address`` (the shared ``client`` calls from 203.0.113.7)."""
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as c:
        yield c


async def api_login(client: httpx.AsyncClient, email: str, agent: str) -> dict[str, Any]:
    response = await client.post(
        "/auth/login",
        json={"email": email, "password": PASSWORD},
        headers={"User-Agent": agent},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def bearer(tokens: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['access_token']}"}


async def sessions_of(client: httpx.AsyncClient, tokens: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.get("/users/me/sessions", headers=bearer(tokens))
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    assert response.headers["X-Total-Count"] == str(len(listed))
    return listed


async def test_each_api_login_is_one_session_with_where_and_when_it_was_last_used(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    laptop = await api_login(client, alice.email, "laptop-cli/1.0")
    first_seen = clock.now()
    clock.advance(timedelta(minutes=3))
    async with client_at(app, "198.51.100.20") as phone:
        phone_tokens = await api_login(phone, alice.email, "phone-app/2.0")
    clock.advance(timedelta(minutes=3))
    async with client_at(app, "198.51.100.30") as elsewhere:
        refreshed = await elsewhere.post(
            "/auth/refresh",
            json={"refresh_token": laptop["refresh_token"]},
            headers={"User-Agent": "laptop-cli/1.1"},
        )
    assert refreshed.status_code == 200
    laptop = refreshed.json()

    listed = await sessions_of(client, phone_tokens)

    mine = [s for s in listed if s["userAgent"] in {"laptop-cli/1.1", "phone-app/2.0"}]
    assert [s["userAgent"] for s in mine] == ["laptop-cli/1.1", "phone-app/2.0"]
    laptop_session, phone_session = mine
    assert laptop_session["kind"] == phone_session["kind"] == "api"
    # The latest link's address and agent, the first link's sign-in time.
    assert laptop_session["address"] == "198.51.100.30"
    assert phone_session["address"] == "198.51.100.20"
    assert laptop_session["createdAt"] < phone_session["createdAt"]
    assert laptop_session["lastUsedAt"] > phone_session["lastUsedAt"]
    assert laptop_session["createdAt"][:16] == first_seen.strftime("%Y-%m-%dT%H:%M")
    assert phone_session["current"] is True
    assert laptop_session["current"] is False
    assert [s["current"] for s in listed].count(True) == 1
    # Sign-up made a session of its own; the list holds every live one.
    assert len(listed) == 3
    assert set(listed[0]) == {
        "id",
        "kind",
        "createdAt",
        "lastUsedAt",
        "expiresAt",
        "address",
        "userAgent",
        "current",
    }
    # The refreshed token sees the same list with itself marked.
    again = await sessions_of(client, laptop)
    assert [s["id"] for s in again if s["current"]] == [laptop_session["id"]]


async def test_the_list_is_paged(client: httpx.AsyncClient, alice: Account) -> None:
    tokens = await api_login(client, alice.email, "one")
    await api_login(client, alice.email, "two")
    response = await client.get(
        "/users/me/sessions", params={"limit": 1, "offset": 1}, headers=bearer(tokens)
    )
    assert response.status_code == 200
    assert len(response.json()) == 1
    assert response.headers["X-Total-Count"] == "3"


async def test_ending_another_session_refuses_its_refresh_and_access_tokens_at_once(
    client: httpx.AsyncClient, alice: Account
) -> None:
    mine = await api_login(client, alice.email, "mine")
    other = await api_login(client, alice.email, "other")
    [other_id] = [s["id"] for s in await sessions_of(client, mine) if s["userAgent"] == "other"]

    ended = await client.delete(f"/users/me/sessions/{other_id}", headers=bearer(mine))

    assert ended.status_code == 200
    assert ended.json() == {"id": other_id, "deleted": True}
    assert_problem(await client.get("/users/me", headers=bearer(other)), 401)
    refresh = await client.post("/auth/refresh", json={"refresh_token": other["refresh_token"]})
    assert_problem(refresh, 401)
    assert (await client.get("/users/me", headers=bearer(mine))).status_code == 200
    assert other_id not in [s["id"] for s in await sessions_of(client, mine)]
    # Ended is gone: a second end is a 404.
    again = await client.delete(f"/users/me/sessions/{other_id}", headers=bearer(mine))
    assert_problem(again, 404)


async def test_ending_the_current_session_signs_out(
    client: httpx.AsyncClient, alice: Account
) -> None:
    mine = await api_login(client, alice.email, "mine")
    [current] = [s["id"] for s in await sessions_of(client, mine) if s["current"]]
    ended = await client.delete(f"/users/me/sessions/{current}", headers=bearer(mine))
    assert ended.status_code == 200
    assert_problem(await client.get("/users/me", headers=bearer(mine)), 401)


async def test_a_logout_also_ends_the_access_token_of_its_session(
    client: httpx.AsyncClient, alice: Account
) -> None:
    mine = await api_login(client, alice.email, "mine")
    out = await client.post("/auth/logout", json={"refresh_token": mine["refresh_token"]})
    assert out.status_code == 200
    assert_problem(await client.get("/users/me", headers=bearer(mine)), 401)


async def test_a_replayed_refresh_token_ends_its_sessions_access_tokens(
    client: httpx.AsyncClient, alice: Account
) -> None:
    first = await api_login(client, alice.email, "mine")
    second = await client.post("/auth/refresh", json={"refresh_token": first["refresh_token"]})
    replay = await client.post("/auth/refresh", json={"refresh_token": first["refresh_token"]})
    assert_problem(replay, 401)
    assert_problem(await client.get("/users/me", headers=bearer(second.json())), 401)


async def test_signing_out_everywhere_else_keeps_the_current_session_alone(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    mine = await api_login(client, alice.email, "mine")
    other = await api_login(client, alice.email, "other")
    async with client_at(app, "192.0.2.44") as browser:
        await signed_in(browser, alice.email)
        assert (await browser.get("/app/settings/sessions")).status_code == 200
        kinds = sorted(s["kind"] for s in await sessions_of(client, mine))
        assert kinds == ["api", "api", "api", "console"]

        done = await client.post("/users/me/sessions/revoke-others", headers=bearer(mine))

        assert done.status_code == 200
        assert done.json() == {"ended": 3}
        assert (await client.get("/users/me", headers=bearer(mine))).status_code == 200
        assert_problem(await client.get("/users/me", headers=bearer(other)), 401)
        gone = await client.post("/auth/refresh", json={"refresh_token": other["refresh_token"]})
        assert_problem(gone, 401)
        signup_refresh = {"refresh_token": alice.refresh_token}
        assert_problem(await client.post("/auth/refresh", json=signup_refresh), 401)
        # The console session is over too: its next page asks to sign in.
        page = await browser.get("/app/settings/sessions")
        assert page.status_code == 303
        assert page.headers["location"].startswith("/app/login")
    [left] = await sessions_of(client, mine)
    assert left["current"] is True
    # The current session's refresh token still works.
    kept = await client.post("/auth/refresh", json={"refresh_token": mine["refresh_token"]})
    assert kept.status_code == 200


async def test_ending_sessions_is_audited(
    client: httpx.AsyncClient, alice: Account, runtime: Any
) -> None:
    from sqlalchemy import select

    from upwatch.models import AuditEvent

    mine = await api_login(client, alice.email, "mine")
    other = await api_login(client, alice.email, "other")
    del other
    [other_id] = [s["id"] for s in await sessions_of(client, mine) if s["userAgent"] == "other"]
    await client.delete(f"/users/me/sessions/{other_id}", headers=bearer(mine))
    await client.post("/users/me/sessions/revoke-others", headers=bearer(mine))
    async with runtime.db.sessionmaker() as session:
        events = (await session.scalars(select(AuditEvent).order_by(AuditEvent.id))).all()
    found = [(e.kind, e.target_id, e.details) for e in events if e.kind.startswith("session.")]
    assert ("session.ended", other_id, {"kind": "api", "current": False}) in found
    [elsewhere] = [f for f in found if f[0] == "session.ended_elsewhere"]
    assert elsewhere[2] == {"count": 1}


async def test_alice_can_neither_see_nor_end_bobs_sessions(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    alice = await sign_up("alice@example.com")
    bob = await sign_up("bob@example.com")
    bob_tokens = {"access_token": bob.access_token}
    alice_tokens = {"access_token": alice.access_token}
    [bobs] = await sessions_of(client, bob_tokens)
    alices = await sessions_of(client, alice_tokens)
    assert bobs["id"] not in [s["id"] for s in alices]

    refused = await client.delete(f"/users/me/sessions/{bobs['id']}", headers=alice.headers)

    assert_problem(refused, 404)
    assert (await client.get("/users/me", headers=bob.headers)).status_code == 200
    unknown = await client.delete(f"/users/me/sessions/{'0' * 32}", headers=alice.headers)
    assert_problem(unknown, 404)
    odd = await client.delete("/users/me/sessions/not-an-id-%E2%9C%93", headers=alice.headers)
    assert_problem(odd, 404)


async def test_an_api_key_cannot_list_or_end_sessions(
    client: httpx.AsyncClient, alice: Account
) -> None:
    project = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
    made = await client.post(
        f"/projects/{project.json()['id']}/api-keys",
        headers=alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    [own] = await sessions_of(client, {"access_token": alice.access_token})
    for method, path in [
        ("GET", "/users/me/sessions"),
        ("POST", "/users/me/sessions/revoke-others"),
        ("DELETE", f"/users/me/sessions/{own['id']}"),
    ]:
        assert_problem(await client.request(method, path, headers=key), 403)
    assert (await client.get("/users/me", headers=alice.headers)).status_code == 200


async def test_a_token_made_before_sessions_had_ids_still_works(
    client: httpx.AsyncClient, alice: Account, runtime: Any
) -> None:
    old = runtime.tokens.issue(alice.id, 0, runtime.clock.now())
    headers = {"Authorization": f"Bearer {old}"}
    listed = await client.get("/users/me/sessions", headers=headers)
    assert listed.status_code == 200
    assert [s["current"] for s in listed.json()] == [False]


async def test_tokens_never_appear_in_the_list_or_the_log(
    client: httpx.AsyncClient, alice: Account, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        mine = await api_login(client, alice.email, "mine")
        listed = await client.get("/users/me/sessions", headers=bearer(mine))
        [current] = [s["id"] for s in listed.json() if s["current"]]
        others = await client.post("/users/me/sessions/revoke-others", headers=bearer(mine))
        ended = await client.delete(f"/users/me/sessions/{current}", headers=bearer(mine))
    secrets = [mine["access_token"], mine["refresh_token"], alice.access_token]
    secrets += [alice.refresh_token]
    for response in (listed, others, ended):
        assert response.status_code == 200
        assert not any(secret in response.text for secret in secrets)
    logged = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    assert not any(secret in logged for secret in secrets)
