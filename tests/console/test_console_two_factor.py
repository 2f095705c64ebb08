"""The console's two-factor pages over HTTP: setting up an authenticator app on the security
page, and the sign-in's second step (codes from pyotp at the service's ManualClock)."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pyotp

from tests.conftest import PASSWORD, Account
from tests.console.forms import csrf_of, signed_in, submit
from upwatch.kit.clock import ManualClock


def _secret_of(page: httpx.Response) -> str:
    found = re.search(r'id="f-secret" type="text" value="([A-Z2-7 ]+)"', page.text)
    assert found, page.text
    return found.group(1).replace(" ", "")


def _codes_of(page: httpx.Response) -> list[str]:
    return re.findall(r"<li><code>([0-9a-z-]+)</code></li>", page.text)


async def _turn_on(
    client: httpx.AsyncClient, account: Account, clock: ManualClock
) -> tuple[str, list[str]]:
    csrf = await signed_in(client, account.email)
    security = await client.get("/app/settings/security")
    assert "Set up an authenticator app" in security.text
    started = await submit(client, "/app/settings/security/totp", csrf)
    assert started.status_code == 200, started.text
    assert "<svg" in started.text
    secret = _secret_of(started)
    code = pyotp.TOTP(secret).at(clock.now())
    confirmed = await submit(client, "/app/settings/security/totp/confirm", csrf, code=code)
    assert confirmed.status_code == 200, confirmed.text
    codes = _codes_of(confirmed)
    assert len(codes) == 10
    # Shown once: the page that can be loaded again shows neither.
    again = await client.get("/app/settings/security")
    assert secret not in again.text.replace(" ", "")
    assert not any(c in again.text for c in codes)
    assert "Recovery codes left: <strong>10</strong>" in again.text
    await submit(client, "/app/logout", csrf_of(again))
    clock.advance(timedelta(seconds=30))
    return secret, codes


async def _password_step(client: httpx.AsyncClient, email: str, **more: str) -> httpx.Response:
    form = await client.get("/app/login")
    return await submit(client, "/app/login", csrf_of(form), email=email, password=PASSWORD, **more)


async def test_a_right_password_leads_to_the_second_step_and_the_code_signs_in(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, _ = await _turn_on(client, alice, clock)
    first = await _password_step(client, alice.email, next="/app/monitors")
    assert first.status_code == 303
    assert first.headers["location"] == "/app/login/second-factor?next=%2Fapp%2Fmonitors"
    assert "upwatch_session" not in first.cookies
    # Not signed in yet.
    assert (await client.get("/app/dashboard")).headers["location"].startswith("/app/login")
    step = await client.get(first.headers["location"])
    assert step.status_code == 200
    assert "Six-digit code" in step.text
    wrong = await submit(
        client,
        "/app/login/second-factor",
        csrf_of(step),
        code="000000" if pyotp.TOTP(secret).at(clock.now()) != "000000" else "111111",
        next="/app/monitors",
    )
    assert wrong.status_code == 401
    assert 'aria-invalid="true"' in wrong.text
    done = await submit(
        client,
        "/app/login/second-factor",
        csrf_of(wrong),
        code=pyotp.TOTP(secret).at(clock.now()),
        next="/app/monitors",
    )
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/app/monitors"
    assert (await client.get("/app/dashboard")).status_code == 200


async def test_a_recovery_code_signs_in_once_on_the_second_step(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    _, codes = await _turn_on(client, alice, clock)
    first = await _password_step(client, alice.email)
    step = await client.get(first.headers["location"])
    switched = await client.get("/app/login/second-factor?with=recovery-code")
    assert "Recovery code" in switched.text
    done = await submit(
        client,
        "/app/login/second-factor",
        csrf_of(step),
        code=codes[0],
        **{"with": "recovery-code"},
    )
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/app/dashboard"
    await submit(client, "/app/logout", csrf_of(await client.get("/app/settings")))
    first = await _password_step(client, alice.email)
    step = await client.get(first.headers["location"])
    reused = await submit(client, "/app/login/second-factor", csrf_of(step), code=codes[0])
    assert reused.status_code == 401


async def test_the_second_step_without_a_pending_sign_in_goes_back_to_the_password(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    await _turn_on(client, alice, clock)
    page = await client.get("/app/login/second-factor")
    assert page.status_code == 303
    assert page.headers["location"] == "/app/login"
    await _password_step(client, alice.email)
    clock.advance(timedelta(minutes=6))
    expired = await client.get("/app/login/second-factor")
    assert expired.headers["location"] == "/app/login"
    client.cookies.set("upwatch_pending", "forged.0.password.99999999999.00", path="/app")
    forged = await client.get("/app/login/second-factor")
    assert forged.headers["location"] == "/app/login"


async def test_wrong_codes_on_the_second_step_are_throttled(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, _ = await _turn_on(client, alice, clock)
    right = pyotp.TOTP(secret).at(clock.now())
    wrong = "000000" if right != "000000" else "111111"
    await _password_step(client, alice.email)
    step = await client.get("/app/login/second-factor")
    statuses = []
    for _ in range(10):
        answer = await submit(client, "/app/login/second-factor", csrf_of(step), code=wrong)
        statuses.append(answer.status_code)
    assert statuses[-1] == 429
    blocked = await submit(client, "/app/login/second-factor", csrf_of(step), code=right)
    assert blocked.status_code == 429


async def test_turning_it_off_and_new_codes_need_a_code(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, codes = await _turn_on(client, alice, clock)
    first = await _password_step(client, alice.email)
    step = await client.get(first.headers["location"])
    await submit(client, "/app/login/second-factor", csrf_of(step), code=codes[0])
    page = await client.get("/app/settings/security")
    csrf = csrf_of(page)
    refused = await submit(client, "/app/settings/security/recovery-codes", csrf, code="nope")
    assert refused.status_code == 422
    assert "wrong" in refused.text
    renewed = await submit(client, "/app/settings/security/recovery-codes", csrf, code=codes[1])
    assert len(_codes_of(renewed)) == 10
    clock.advance(timedelta(seconds=30))
    off = await submit(
        client,
        "/app/settings/security/totp/disable",
        csrf,
        code=pyotp.TOTP(secret).at(clock.now()),
    )
    assert off.status_code == 303
    assert "Set up an authenticator app" in (await client.get("/app/settings/security")).text


async def test_a_second_factor_removed_meanwhile_ends_the_pending_sign_in(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    _, codes = await _turn_on(client, alice, clock)
    await _password_step(client, alice.email)
    off = await client.request(
        "DELETE", "/users/me/mfa/totp", headers=alice.headers, json={"code": codes[0]}
    )
    assert off.status_code == 200, off.text
    page = await client.get("/app/login/second-factor")
    assert page.headers["location"] == "/app/login"
