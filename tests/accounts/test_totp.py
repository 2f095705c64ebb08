"""Two-factor sign-in with TOTP (issue 37): enrolment, confirmation, sign-in with a code or a
recovery code, replay, the throttle, turning it off, and secrets kept out of answers and logs.
Codes are computed with pyotp at the service's ManualClock time."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import httpx
import pyotp
import pytest
from sqlalchemy import select

from tests.conftest import PASSWORD, Account, Cast, assert_problem
from tests.factories import log_in
from upwatch.audit import kinds
from upwatch.kit.clock import ManualClock
from upwatch.models import AuditEvent, User
from upwatch.runtime import Runtime


def code_at(secret: str, clock: ManualClock, steps: int = 0) -> str:
    return pyotp.TOTP(secret).at(clock.now() + timedelta(seconds=30 * steps))


async def enrol(client: httpx.AsyncClient, account: Account) -> str:
    started = await client.post("/users/me/mfa/totp", headers=account.headers)
    assert started.status_code == 201, started.text
    return str(started.json()["secret"])


async def turn_on(
    client: httpx.AsyncClient, account: Account, clock: ManualClock
) -> tuple[str, list[str]]:
    """TOTP on for ``account``: its secret and recovery codes. The clock moves on a step, so
    the confirming code is not the one a test signs in with next."""
    secret = await enrol(client, account)
    confirmed = await client.post(
        "/users/me/mfa/totp/confirm",
        headers=account.headers,
        json={"code": code_at(secret, clock)},
    )
    assert confirmed.status_code == 200, confirmed.text
    clock.advance(timedelta(seconds=30))
    return secret, list(confirmed.json()["recoveryCodes"])


async def login(client: httpx.AsyncClient, email: str, **extra: Any) -> httpx.Response:
    return await client.post("/auth/login", json={"email": email, "password": PASSWORD, **extra})


async def test_enrolment_shows_the_secret_and_an_otpauth_address_once(
    client: httpx.AsyncClient, alice: Account
) -> None:
    started = await client.post("/users/me/mfa/totp", headers=alice.headers)
    assert started.status_code == 201
    body = started.json()
    assert set(body) == {"secret", "otpauthUri"}
    uri = pyotp.parse_uri(body["otpauthUri"])
    assert uri.secret == body["secret"]
    assert uri.issuer == "Upwatch"
    assert uri.name == "alice@example.com"
    status = (await client.get("/users/me/mfa", headers=alice.headers)).json()
    assert status["totpPending"] is True
    assert status["totpEnabled"] is False
    assert body["secret"] not in str(status)


async def test_an_unconfirmed_enrolment_changes_nothing_at_sign_in(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await enrol(client, alice)
    assert (await login(client, alice.email)).status_code == 200


async def test_confirming_turns_totp_on_and_gives_ten_single_use_recovery_codes(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    _, codes = await turn_on(client, alice, clock)
    assert len(codes) == 10
    assert len(set(codes)) == 10
    status = (await client.get("/users/me/mfa", headers=alice.headers)).json()
    assert status["totpEnabled"] is True
    assert status["totpEnabledAt"] is not None
    assert status["recoveryCodesLeft"] == 10
    assert status["hasSecondFactor"] is True
    again = await client.post("/users/me/mfa/totp", headers=alice.headers)
    assert_problem(again, 409)


async def test_confirming_needs_an_enrolment_and_the_right_code(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    none_yet = await client.post(
        "/users/me/mfa/totp/confirm", headers=alice.headers, json={"code": "123456"}
    )
    assert_problem(none_yet, 409)
    secret = await enrol(client, alice)
    right = code_at(secret, clock)
    wrong = "000000" if right != "000000" else "111111"
    refused = await client.post(
        "/users/me/mfa/totp/confirm", headers=alice.headers, json={"code": wrong}
    )
    body = assert_problem(refused, 422)
    assert body["errors"][0]["field"] == "code"
    status = (await client.get("/users/me/mfa", headers=alice.headers)).json()
    assert status["totpEnabled"] is False


async def test_sign_in_with_totp_on_needs_the_code(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, _ = await turn_on(client, alice, clock)
    missing = await login(client, alice.email)
    body = assert_problem(missing, 401)
    assert body["type"].endswith("/mfa-required")
    right = await login(client, alice.email, otp=code_at(secret, clock))
    assert right.status_code == 200, right.text
    assert right.json()["access_token"]


async def test_a_replayed_or_old_code_is_refused_and_the_next_one_works(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, _ = await turn_on(client, alice, clock)
    code = code_at(secret, clock)
    assert (await login(client, alice.email, otp=code)).status_code == 200
    replayed = await login(client, alice.email, otp=code)
    assert not assert_problem(replayed, 401)["type"].endswith("/mfa-required")
    two_steps_ago = code_at(secret, clock, -2)
    assert_problem(await login(client, alice.email, otp=two_steps_ago), 401)
    clock.advance(timedelta(seconds=30))
    assert (await login(client, alice.email, otp=code_at(secret, clock))).status_code == 200


async def test_a_code_of_the_step_before_is_still_accepted(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, _ = await turn_on(client, alice, clock)
    clock.advance(timedelta(seconds=30))
    late = code_at(secret, clock, -1)
    assert (await login(client, alice.email, otp=late)).status_code == 200


async def test_a_recovery_code_works_once_in_place_of_the_code(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    _, codes = await turn_on(client, alice, clock)
    # However it is typed: upper case, without hyphens.
    typed = codes[0].replace("-", "").upper()
    assert (await login(client, alice.email, otp=typed)).status_code == 200
    assert_problem(await login(client, alice.email, otp=codes[0]), 401)
    status = (await client.get("/users/me/mfa", headers=alice.headers)).json()
    assert status["recoveryCodesLeft"] == 9


async def test_wrong_codes_count_toward_the_login_throttle(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, _ = await turn_on(client, alice, clock)
    right = code_at(secret, clock)
    wrong = "000000" if right != "000000" else "111111"
    for _ in range(10):
        assert_problem(await login(client, alice.email, otp=wrong), 401)
    blocked = await login(client, alice.email, otp=right)
    assert_problem(blocked, 429)
    assert int(blocked.headers["Retry-After"]) > 0


async def test_a_right_password_without_the_code_counts_toward_the_throttle_too(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    await turn_on(client, alice, clock)
    for _ in range(10):
        assert_problem(await login(client, alice.email), 401)
    assert_problem(await login(client, alice.email), 429)


async def test_turning_totp_off_needs_a_code_and_takes_the_recovery_codes(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, codes = await turn_on(client, alice, clock)
    no_code = await client.request("DELETE", "/users/me/mfa/totp", headers=alice.headers)
    assert_problem(no_code, 422)
    wrong = await client.request(
        "DELETE", "/users/me/mfa/totp", headers=alice.headers, json={"code": "not a code"}
    )
    assert_problem(wrong, 422)
    off = await client.request(
        "DELETE",
        "/users/me/mfa/totp",
        headers=alice.headers,
        json={"code": code_at(secret, clock)},
    )
    assert off.status_code == 200, off.text
    assert off.json() == {"id": alice.id, "deleted": True}
    assert (await login(client, alice.email)).status_code == 200
    status = (await client.get("/users/me/mfa", headers=alice.headers)).json()
    assert status == {
        "totpEnabled": False,
        "totpEnabledAt": None,
        "totpPending": False,
        "recoveryCodesLeft": 0,
        "passkeyCount": 0,
        "hasSecondFactor": False,
    }
    again = await client.request(
        "DELETE", "/users/me/mfa/totp", headers=alice.headers, json={"code": codes[1]}
    )
    assert_problem(again, 409)


async def test_a_recovery_code_turns_totp_off(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    _, codes = await turn_on(client, alice, clock)
    off = await client.request(
        "DELETE", "/users/me/mfa/totp", headers=alice.headers, json={"code": codes[3]}
    )
    assert off.status_code == 200, off.text


async def test_new_recovery_codes_replace_the_old_ones(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    secret, old = await turn_on(client, alice, clock)
    renewed = await client.post(
        "/users/me/mfa/recovery-codes",
        headers=alice.headers,
        json={"code": code_at(secret, clock)},
    )
    assert renewed.status_code == 200, renewed.text
    new = renewed.json()["recoveryCodes"]
    assert len(new) == 10
    assert not set(new) & set(old)
    assert_problem(await login(client, alice.email, otp=old[0]), 401)
    assert (await login(client, alice.email, otp=new[0])).status_code == 200


async def test_the_mfa_routes_need_totp_in_the_right_state(
    client: httpx.AsyncClient, alice: Account
) -> None:
    renew = await client.post(
        "/users/me/mfa/recovery-codes", headers=alice.headers, json={"code": "123456"}
    )
    assert_problem(renew, 409)
    off = await client.request(
        "DELETE", "/users/me/mfa/totp", headers=alice.headers, json={"code": "123456"}
    )
    assert_problem(off, 409)


async def test_an_api_key_cannot_reach_the_mfa_routes(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    for method, path, body in (
        ("GET", "/users/me/mfa", None),
        ("POST", "/users/me/mfa/totp", None),
        ("POST", "/users/me/mfa/totp/confirm", {"code": "123456"}),
        ("DELETE", "/users/me/mfa/totp", {"code": "123456"}),
        ("POST", "/users/me/mfa/recovery-codes", {"code": "123456"}),
    ):
        response = await client.request(method, path, headers=key, json=body)
        assert_problem(response, 403)


async def test_one_accounts_totp_is_no_other_accounts(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    secret, codes = await turn_on(client, cast.alice, clock)
    bob_status = (await client.get("/users/me/mfa", headers=cast.bob.headers)).json()
    assert bob_status["totpEnabled"] is False
    # Alice's code and recovery code do nothing for Bob.
    off = await client.request(
        "DELETE",
        "/users/me/mfa/totp",
        headers=cast.bob.headers,
        json={"code": codes[0]},
    )
    assert_problem(off, 409)
    assert (await login(client, cast.bob.email)).status_code == 200
    assert_problem(await login(client, cast.alice.email, otp="000000"), 401)
    assert (await login(client, cast.alice.email, otp=code_at(secret, clock))).status_code == 200


async def test_sign_ins_and_totp_changes_are_audited_without_secrets(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock, runtime: Runtime
) -> None:
    secret, codes = await turn_on(client, alice, clock)
    await log_in(client, alice.email, "wrong password")
    await login(client, alice.email)
    await login(client, alice.email, otp="000000" if code_at(secret, clock) != "000000" else "1")
    await login(client, alice.email, otp=code_at(secret, clock))
    await login(client, alice.email, otp=codes[0])
    async with runtime.db.sessionmaker() as session:
        events = (
            await session.scalars(
                select(AuditEvent)
                .where(AuditEvent.account_id == alice.id)
                .order_by(AuditEvent.occurred_at, AuditEvent.id)
            )
        ).all()
    seen = [(e.kind, e.details) for e in events]
    assert (kinds.TOTP_ENABLED, {}) in seen
    # The clock stands still, so the events' order is not theirs: compare them as sets.
    failed = sorted(d["reason"] for k, d in seen if k == kinds.SIGN_IN_FAILED)
    assert failed == ["otp", "password", "second_factor_missing"]
    succeeded = sorted(d["secondFactor"] for k, d in seen if k == kinds.SIGN_IN_SUCCEEDED)
    assert succeeded == ["recovery_code", "totp"]
    assert any(k == kinds.RECOVERY_CODE_USED for k, _ in seen)
    for event in events:
        text = f"{event.details} {event.target_label} {event.user_agent}"
        assert secret not in text
        assert all(code not in text for code in codes)


async def test_the_secret_and_codes_appear_in_no_later_answer_and_no_log(
    client: httpx.AsyncClient,
    alice: Account,
    clock: ManualClock,
    runtime: Runtime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret, codes = await turn_on(client, alice, clock)
    await login(client, alice.email, otp=codes[0])
    await login(client, alice.email, otp=code_at(secret, clock))
    later = [
        await client.get("/users/me/mfa", headers=alice.headers),
        await client.get("/users/me", headers=alice.headers),
        await client.get("/users/settings", headers=alice.headers),
    ]
    for response in later:
        assert response.status_code == 200
        assert secret not in response.text
        assert all(code not in response.text for code in codes)
    logged = caplog.text
    assert secret not in logged
    assert all(code not in logged for code in codes)
    async with runtime.db.sessionmaker() as session:
        user = await session.get(User, alice.id)
        assert user is not None
        stored = user.totp_secret or ""
    # Stored sealed, not as it is.
    assert stored
    assert secret not in stored


async def test_odd_codes_are_refused_without_a_fault(
    client: httpx.AsyncClient, alice: Account, clock: ManualClock
) -> None:
    await turn_on(client, alice, clock)
    for odd in ("", " ", "------", "1234567", "é" * 10, "0" * 64, "\u00000"):
        response = await login(client, alice.email, otp=odd)
        assert response.status_code in {401, 422}, (odd, response.text)
    too_long = await login(client, alice.email, otp="1" * 65)
    assert_problem(too_long, 422)
