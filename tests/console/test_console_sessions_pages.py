"""The console's sessions page over HTTP: listed with this browser marked, ended one by one or
all but this one, each form with its CSRF token, another person's session a 404 page, and a
page view recorded as the session's last use at most every few minutes."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from tests.conftest import Account, SignUp
from tests.console.forms import signed_in, submit
from upwatch.kit.clock import ManualClock

PAGE = "/app/settings/sessions"


async def sessions_of(client: httpx.AsyncClient, account: Account) -> list[dict[str, Any]]:
    response = await client.get("/users/me/sessions", headers=account.headers)
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    return listed


async def browser_at(app: FastAPI, address: str, agent: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(
        transport=transport, base_url="http://upwatch.test", headers={"User-Agent": agent}
    )


async def test_the_page_lists_every_session_and_marks_this_browser(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    async with await browser_at(app, "192.0.2.5", "Firefox/130") as browser:
        await signed_in(browser, alice.email)
        page = await browser.get(PAGE)
    assert page.status_code == 200
    rows = re.findall(r'<tr id="session-([0-9a-f]{32})"( class="current")?>', page.text)
    assert len(rows) == 2
    [(console_id, _)] = [row for row in rows if row[1]]
    assert "This browser" in page.text
    assert "192.0.2.5" in page.text
    assert "Firefox/130" in page.text
    listed = {s["id"]: s for s in await sessions_of(client, alice)}
    assert listed[console_id]["kind"] == "console"
    assert listed[console_id]["address"] == "192.0.2.5"
    assert listed[console_id]["userAgent"] == "Firefox/130"
    assert alice.access_token not in page.text
    assert alice.refresh_token not in page.text


async def test_the_settings_page_links_to_the_sessions_page(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await signed_in(client, alice.email)
    assert f'href="{PAGE}"' in (await client.get("/app/settings")).text


async def test_ending_an_api_session_from_the_console_refuses_its_token(
    client: httpx.AsyncClient, alice: Account
) -> None:
    csrf = await signed_in(client, alice.email)
    [api] = [s for s in await sessions_of(client, alice) if s["kind"] == "api"]

    done = await submit(client, f"{PAGE}/{api['id']}/end", csrf)

    assert done.status_code == 303
    assert done.headers["location"] == PAGE
    assert (await client.get("/users/me", headers=alice.headers)).status_code == 401
    assert "The session is ended." in (await client.get(PAGE)).text


async def test_signing_out_everywhere_else_from_the_console_keeps_this_browser(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    csrf = await signed_in(client, alice.email)
    async with await browser_at(app, "192.0.2.6", "Other/1") as other:
        await signed_in(other, alice.email)

        done = await submit(client, f"{PAGE}/others", csrf)

        assert done.status_code == 303
        assert (await other.get(PAGE)).status_code == 303
    page = await client.get(PAGE)
    assert page.status_code == 200
    assert "Signed out everywhere else (2 sessions)." in page.text
    assert len(re.findall(r'<tr id="session-', page.text)) == 1
    assert (await client.get("/users/me", headers=alice.headers)).status_code == 401


async def test_ending_this_browsers_session_signs_out(
    client: httpx.AsyncClient, alice: Account
) -> None:
    csrf = await signed_in(client, alice.email)
    page = await client.get(PAGE)
    [mine] = re.findall(r'<tr id="session-([0-9a-f]{32})" class="current">', page.text)
    done = await submit(client, f"{PAGE}/{mine}/end", csrf)
    assert done.status_code == 303
    assert done.headers["location"] == "/app/login"
    assert (await client.get(PAGE)).status_code == 303


async def test_a_form_without_its_csrf_token_ends_nothing(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await signed_in(client, alice.email)
    [api] = [s for s in await sessions_of(client, alice) if s["kind"] == "api"]
    for path in (f"{PAGE}/{api['id']}/end", f"{PAGE}/others"):
        refused = await client.post(path, data={"csrf": "forged"})
        assert refused.status_code == 403
    assert (await client.get("/users/me", headers=alice.headers)).status_code == 200


async def test_another_persons_session_is_a_not_found_page(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    alice = await sign_up("alice@example.com")
    bob = await sign_up("bob@example.com")
    [bobs] = await sessions_of(client, bob)
    csrf = await signed_in(client, alice.email)
    for session_id in (bobs["id"], "not-a-session"):
        refused = await submit(client, f"{PAGE}/{session_id}/end", csrf)
        assert refused.status_code == 404
    assert (await client.get("/users/me", headers=bob.headers)).status_code == 200


async def test_a_page_view_is_recorded_as_last_use_at_most_every_five_minutes(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    await signed_in(client, alice.email)

    def console(listed: list[dict[str, Any]]) -> str:
        return str(next(s for s in listed if s["kind"] == "console")["lastUsedAt"])

    signed_in_at = console(await sessions_of(client, alice))
    clock.advance(timedelta(minutes=4))
    await client.get("/app/monitors")
    assert console(await sessions_of(client, alice)) == signed_in_at
    clock.advance(timedelta(minutes=2))
    await client.get("/app/monitors")
    later = console(await sessions_of(client, alice))
    assert later > signed_in_at
    clock.advance(timedelta(minutes=1))
    await client.get("/app/monitors")
    assert console(await sessions_of(client, alice)) == later
