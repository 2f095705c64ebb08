"""Passkeys over HTTP, with a software authenticator (the browser's own virtual authenticator
is in tests/console/test_browser_passkeys.py): registering one in the console, signing in
with it instead of the password and as the second factor, the counter and replay rules, the
API's list and delete behind the tenant wall, and forged answers refused, never a 500."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.accounts.soft_authenticator import SoftAuthenticator
from tests.app_settings import overriding
from tests.conftest import PASSWORD, Cast, assert_problem
from tests.console.forms import csrf_of, signed_in, submit
from upwatch.accounts.factors import PendingSignIns
from upwatch.accounts.passkeys import Ceremonies
from upwatch.kit.clock import ManualClock
from upwatch.models import AuditEvent, PasskeyCredential
from upwatch.runtime import Runtime

LATER = timedelta(seconds=5)


def other_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """A second browser: the same app, a cookie jar of its own."""
    return httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))


async def options(client: httpx.AsyncClient, path: str, token: str) -> dict[str, Any]:
    response = await client.post(path, headers={"X-CSRF-Token": token}, json={})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def register(
    client: httpx.AsyncClient, csrf: str, authenticator: SoftAuthenticator, name: str = "Laptop"
) -> httpx.Response:
    asked = await options(client, "/app/settings/passkeys/options", csrf)
    return await submit(
        client,
        "/app/settings/passkeys",
        csrf,
        name=name,
        credential=authenticator.create(asked),
    )


async def sign_in_page_token(client: httpx.AsyncClient) -> str:
    return csrf_of(await client.get("/app/login"))


async def passkey_sign_in(
    client: httpx.AsyncClient, authenticator: SoftAuthenticator, **say: Any
) -> httpx.Response:
    token = await sign_in_page_token(client)
    asked = await options(client, "/app/login/passkey/options", token)
    answer = authenticator.get(asked, **say)
    return await submit(client, "/app/login/passkey", token, credential=answer)


def token_of(client: httpx.AsyncClient) -> str:
    return client.cookies.get("upwatch_form") or ""


async def answered(client: httpx.AsyncClient, authenticator: SoftAuthenticator) -> tuple[str, str]:
    """A sign-in answer of ``authenticator`` and the challenge cookie it answers."""
    token = await sign_in_page_token(client)
    asked = await options(client, "/app/login/passkey/options", token)
    return authenticator.get(asked), client.cookies.get("upwatch_passkey") or ""


async def replay(client: httpx.AsyncClient, answer: str, challenge: str) -> httpx.Response:
    """``answer`` posted again, with its challenge cookie, from another browser."""
    async with other_client(client) as thief:
        token = await sign_in_page_token(thief)
        thief.cookies.set("upwatch_passkey", challenge)
        return await submit(thief, "/app/login/passkey", token, credential=answer)


async def events(runtime: Runtime, kind: str) -> list[AuditEvent]:
    async with runtime.db.sessionmaker() as session:
        found = await session.scalars(
            select(AuditEvent).where(AuditEvent.kind == kind).order_by(AuditEvent.occurred_at)
        )
        return list(found.all())


async def test_a_registered_passkey_signs_in_without_the_password(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    laptop = SoftAuthenticator()
    added = await register(client, csrf, laptop)
    assert added.status_code == 303, added.text
    page = await client.get("/app/settings/passkeys")
    assert "Laptop" in page.text
    assert laptop.id not in page.text

    clock.advance(LATER)
    async with other_client(client) as browser:
        done = await passkey_sign_in(browser, laptop)
        assert done.status_code == 303, done.text
        assert done.headers["location"] == "/app/dashboard"
        dashboard = await browser.get("/app/dashboard")
        assert dashboard.status_code == 200
        assert cast.alice.email in dashboard.text

    listed = await client.get("/users/me/passkeys", headers=cast.alice.headers)
    assert listed.status_code == 200
    [passkey] = listed.json()
    assert set(passkey) == {"id", "name", "createdAt", "lastUsedAt", "transports"}
    assert passkey["name"] == "Laptop"
    assert passkey["transports"] == ["internal"]  # what no browser says is dropped
    assert passkey["lastUsedAt"] is not None
    assert laptop.id not in listed.text

    [added_event] = await events(runtime, "passkey.added")
    assert added_event.actor_id == cast.alice.id
    succeeded = [e for e in await events(runtime, "sign_in.succeeded") if e.via == "passkey"]
    assert [e.actor_id for e in succeeded] == [cast.alice.id]


async def test_an_answer_is_taken_once_and_a_counter_must_grow(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    key = SoftAuthenticator()
    assert (await register(client, csrf, key)).status_code == 303
    clock.advance(LATER)
    async with other_client(client) as browser:
        answer, challenge = await answered(browser, key)
        first = await submit(browser, "/app/login/passkey", token_of(browser), credential=answer)
        assert first.status_code == 303
    # The same answer with the same challenge cookie, posted again.
    replayed = await replay(client, answer, challenge)
    assert replayed.status_code == 401
    assert "upwatch_session" not in replayed.cookies
    clock.advance(LATER)
    async with other_client(client) as clone:
        # A cloned authenticator says a counter already seen.
        refused = await passkey_sign_in(clone, key, count=key.count)
        assert refused.status_code == 401
        assert "Sign in with a passkey" in refused.text
    failed = await events(runtime, "sign_in.failed")
    assert len(failed) == 2
    # Both said a counter already seen (the replay its own), which the check refuses.
    assert [(e.account_id, e.via, e.details["reason"]) for e in failed] == [
        (cast.alice.id, "passkey", "not verified")
    ] * 2


async def test_a_passkey_without_a_counter_signs_in_again_but_never_twice_on_one_challenge(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    synced = SoftAuthenticator(counts=False)
    assert (await register(client, csrf, synced)).status_code == 303
    for _ in range(2):
        clock.advance(LATER)
        async with other_client(client) as browser:
            assert (await passkey_sign_in(browser, synced)).status_code == 303
    clock.advance(LATER)
    async with other_client(client) as browser:
        answer, challenge = await answered(browser, synced)
        done = await submit(browser, "/app/login/passkey", token_of(browser), credential=answer)
        assert done.status_code == 303
    assert (await replay(client, answer, challenge)).status_code == 401
    [failed] = await events(runtime, "sign_in.failed")
    assert failed.details == {"reason": "replayed or cloned"}


async def test_a_passkey_is_the_second_factor_after_a_right_password(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock
) -> None:
    alices = SoftAuthenticator()
    assert (await register(client, await signed_in(client, cast.alice.email), alices)).is_redirect
    async with other_client(client) as bobs_browser:
        bobs = SoftAuthenticator()
        assert await register(bobs_browser, await signed_in(bobs_browser, cast.bob.email), bobs)
    clock.advance(LATER)
    async with other_client(client) as browser:
        token = await sign_in_page_token(browser)
        first = await submit(
            browser,
            "/app/login",
            token,
            email=cast.alice.email,
            password=PASSWORD,
            next="/app/settings",
        )
        assert first.status_code == 303
        assert first.headers["location"] == "/app/login/second-factor?next=%2Fapp%2Fsettings"
        assert "upwatch_session" not in first.cookies
        assert (await browser.get("/app/dashboard")).headers["location"].startswith("/app/login")
        step = await browser.get(first.headers["location"])
        assert 'action="/app/login/second-factor/passkey"' in step.text
        assert '<input type="hidden" name="next" value="/app/settings">' in step.text
        token = csrf_of(step)
        asked = await options(browser, "/app/login/second-factor/passkey/options", token)
        # Only the pending account's passkeys are asked for.
        assert [c["id"] for c in asked["allowCredentials"]] == [alices.id]
        # Bob's passkey is not Alice's second factor.
        wrong = await submit(
            browser, "/app/login/second-factor/passkey", token, credential=bobs.get(asked)
        )
        assert wrong.status_code == 401
        asked = await options(browser, "/app/login/second-factor/passkey/options", token)
        done = await submit(
            browser,
            "/app/login/second-factor/passkey",
            token,
            credential=alices.get(asked),
            next="/app/settings",
        )
        assert done.status_code == 303, done.text
        assert done.headers["location"] == "/app/settings"  # where the visitor was going
        assert (await browser.get("/app/dashboard")).status_code == 200
    via = [e.via for e in await events(runtime, "sign_in.succeeded") if e.actor_id == cast.alice.id]
    assert "password+passkey" in via


async def test_the_second_step_needs_a_pending_sign_in_of_the_current_password(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    key = SoftAuthenticator()
    assert (await register(client, await signed_in(client, cast.alice.email), key)).is_redirect
    async with other_client(client) as browser:
        token = await sign_in_page_token(browser)
        nothing = await browser.post(
            "/app/login/second-factor/passkey/options", headers={"X-CSRF-Token": token}
        )
        assert_problem(nothing, 403)
        gone = await submit(browser, "/app/login/second-factor/passkey", token, credential="{}")
        assert gone.status_code == 303
        assert gone.headers["location"] == "/app/login"
        first = await submit(
            browser, "/app/login", token, email=cast.alice.email, password=PASSWORD
        )
        assert first.headers["location"] == "/app/login/second-factor"
        asked = await options(browser, "/app/login/second-factor/passkey/options", token)
        # The password changes in between: the pending sign-in is void.
        changed = await client.put(
            "/users/me", headers=cast.alice.headers, json={"password": "another-pass-1234"}
        )
        assert changed.status_code == 200
        late = await submit(
            browser, "/app/login/second-factor/passkey", token, credential=key.get(asked)
        )
        assert late.status_code == 303
        assert late.headers["location"] == "/app/login"
        assert "upwatch_session" not in late.cookies


async def test_a_removed_passkey_no_longer_signs_in(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    key = SoftAuthenticator()
    assert (await register(client, csrf, key)).is_redirect
    [passkey] = (await client.get("/users/me/passkeys", headers=cast.alice.headers)).json()
    removed = await submit(client, f"/app/settings/passkeys/{passkey['id']}/remove", csrf)
    assert removed.status_code == 303
    assert (await client.get("/users/me/passkeys", headers=cast.alice.headers)).json() == []
    [event] = await events(runtime, "passkey.removed")
    assert event.target_id == passkey["id"]
    clock.advance(LATER)
    async with other_client(client) as browser:
        refused = await passkey_sign_in(browser, key)
        assert refused.status_code == 401
        assert "upwatch_session" not in refused.cookies
    # Without passkeys (or TOTP), the password alone signs in again.
    async with other_client(client) as browser:
        await signed_in(browser, cast.alice.email)


async def test_nobody_lists_or_removes_another_persons_passkeys(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    assert (await register(client, csrf, SoftAuthenticator())).is_redirect
    [passkey] = (await client.get("/users/me/passkeys", headers=cast.alice.headers)).json()
    theirs = await client.get("/users/me/passkeys", headers=cast.charlie.headers)
    assert theirs.json() == []
    walled = await client.delete(f"/users/me/passkeys/{passkey['id']}", headers=cast.bob.headers)
    assert_problem(walled, 404)
    async with other_client(client) as charlie:
        other = await signed_in(charlie, cast.charlie.email)
        page = await submit(charlie, f"/app/settings/passkeys/{passkey['id']}/remove", other)
        assert page.status_code == 404
    assert_problem(await client.delete("/users/me/passkeys/nope", headers=cast.alice.headers), 404)
    deleted = await client.delete(f"/users/me/passkeys/{passkey['id']}", headers=cast.alice.headers)
    assert deleted.json() == {"id": passkey["id"], "deleted": True}


async def test_an_api_key_cannot_list_or_remove_passkeys(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    assert_problem(await client.get("/users/me/passkeys", headers=key), 403)
    assert_problem(await client.delete("/users/me/passkeys/x", headers=key), 403)
    assert_problem(await client.get("/users/me/passkeys"), 401)


GARBAGE = [
    "",
    "garbage",
    "[]",
    "{}",
    json.dumps({"id": 5, "rawId": None, "response": "x", "type": "public-key"}),
    json.dumps({"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {}}),
    json.dumps(
        {
            "id": "A" * 2000,
            "rawId": "A" * 2000,
            "type": "public-key",
            "response": {"clientDataJSON": "!!", "authenticatorData": "~", "signature": "%"},
        }
    ),
    "x" * 70_000,
]


@pytest.mark.parametrize("answer", GARBAGE, ids=range(len(GARBAGE)))
async def test_a_forged_or_garbage_answer_is_refused_never_a_fault(
    client: httpx.AsyncClient, cast: Cast, answer: str, clock: ManualClock
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    key = SoftAuthenticator()
    assert (await register(client, csrf, key)).is_redirect
    await options(client, "/app/settings/passkeys/options", csrf)
    registered = await submit(client, "/app/settings/passkeys", csrf, name="X", credential=answer)
    assert registered.status_code == 422
    clock.advance(LATER)
    async with other_client(client) as browser:
        token = await sign_in_page_token(browser)
        await options(browser, "/app/login/passkey/options", token)
        refused = await submit(browser, "/app/login/passkey", token, credential=answer)
        assert refused.status_code == 401
        assert "text/html" in refused.headers["content-type"]
        # A real answer, tampered with after signing.
        asked = await options(browser, "/app/login/passkey/options", token)
        forged = json.loads(key.get(asked))
        forged["response"]["signature"] = forged["response"]["signature"][::-1]
        tampered = await submit(browser, "/app/login/passkey", token, credential=json.dumps(forged))
        assert tampered.status_code == 401
    async with other_client(client) as browser:
        token = await sign_in_page_token(browser)
        first = await submit(
            browser, "/app/login", token, email=cast.alice.email, password=PASSWORD
        )
        assert first.headers["location"] == "/app/login/second-factor"
        await options(browser, "/app/login/second-factor/passkey/options", token)
        second = await submit(browser, "/app/login/second-factor/passkey", token, credential=answer)
        assert second.status_code == 401
        assert "upwatch_session" not in second.cookies


async def test_the_ceremony_routes_want_the_forms_token_and_their_own_challenge(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    assert_problem(await client.post("/app/settings/passkeys/options"), 403)
    assert_problem(
        await client.post("/app/settings/passkeys/options", headers={"X-CSRF-Token": "x"}), 403
    )
    async with other_client(client) as anonymous:
        assert (await anonymous.post("/app/settings/passkeys/options")).status_code == 401
        assert_problem(await anonymous.post("/app/login/passkey/options"), 403)
        token = await sign_in_page_token(anonymous)
        no_token = await submit(anonymous, "/app/login/passkey", "wrong", credential="{}")
        assert no_token.status_code == 403
        # Sign-in options are no registration options: their challenge does not register.
        asked = await options(anonymous, "/app/login/passkey/options", token)
        client.cookies.set("upwatch_passkey", anonymous.cookies.get("upwatch_passkey") or "")
    key = SoftAuthenticator()
    registered = await submit(
        client,
        "/app/settings/passkeys",
        csrf,
        name="Mixed",
        credential=key.create({"challenge": asked["challenge"], "user": {"id": "YQ"}}),
    )
    assert registered.status_code == 422
    assert "too old or not yours" in registered.text


async def test_a_name_is_required_and_one_key_registers_once(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    key = SoftAuthenticator()
    unnamed = await register(client, csrf, key, name="  ")
    assert unnamed.status_code == 422
    assert 'id="e-name"' in unnamed.text
    assert (await register(client, csrf, key)).is_redirect
    twice = await register(client, csrf, key, name="Again")
    assert twice.status_code == 409
    async with runtime.db.sessionmaker() as session:
        stored = (await session.scalars(select(PasskeyCredential))).all()
    assert [p.name for p in stored] == ["Laptop"]


class TestAtAnIpAddress:
    settings_overrides = overriding(public_url="http://127.0.0.1:8000")

    async def test_passkeys_are_refused_with_the_reason(
        self, client: httpx.AsyncClient, cast: Cast
    ) -> None:
        csrf = await signed_in(client, cast.alice.email)
        page = await client.get("/app/settings/passkeys")
        assert "is an IP address" in page.text
        refused = await client.post(
            "/app/settings/passkeys/options", headers={"X-CSRF-Token": csrf}
        )
        assert "domain name" in assert_problem(refused, 409)["detail"]


async def test_sign_ins_finished_with_a_passkey_count_as_no_failures(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock
) -> None:
    """A password and a passkey that both were right forgive the password step's throttle
    slots, as a TOTP code does: else an account (and everyone behind its address) would be
    shut out after a few ordinary sign-ins."""
    key = SoftAuthenticator()
    assert (await register(client, await signed_in(client, cast.alice.email), key)).is_redirect
    for _ in range(runtime.settings.login_failures_allowed + 1):
        clock.advance(LATER)
        async with other_client(client) as browser:
            token = await sign_in_page_token(browser)
            first = await submit(
                browser, "/app/login", token, email=cast.alice.email, password=PASSWORD
            )
            assert first.status_code == 303, first.text
            asked = await options(browser, "/app/login/second-factor/passkey/options", token)
            done = await submit(
                browser, "/app/login/second-factor/passkey", token, credential=key.get(asked)
            )
            assert done.status_code == 303, done.text
            assert done.headers["location"] == "/app/dashboard"


async def test_a_cookie_beyond_ascii_is_a_void_sign_in_never_a_fault(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    # A browser sends what a page or an extension set: a pending sign-in or a ceremony
    # cookie with characters beyond ASCII is no sign-in, not a 500.
    now = clock.now()
    forged = "a.1.password.99999999999.\u00e9"
    assert PendingSignIns("key").read(forged, now) is None
    assert Ceremonies("key").read("sign_in..AA.1.\u00e9", "sign_in", now) is None
    step = await client.get(
        "/app/login/second-factor", headers={"Cookie": b"upwatch_pending=a.b.c.1.\xc3\xa9"}
    )
    assert step.status_code == 303
    assert step.headers["location"] == "/app/login"
