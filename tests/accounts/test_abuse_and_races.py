"""Abuse and concurrency: what an attacker racing or flooding the API must not achieve."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import select

from tests.conftest import (
    Account,
    Mailbox,
    SignUp,
    assert_problem,
    eventually,
    make_settings,
)
from tests.factories import change_profile, log_in, reset_password
from upwatch.kit.clock import ManualClock
from upwatch.kit.throttle import SlidingWindow
from upwatch.mail.sender import SCRUBBED_BODY
from upwatch.models import MailMessage
from upwatch.runtime import Runtime


async def test_concurrent_wrong_logins_cannot_exceed_the_throttle(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    await sign_up("alice@example.com")
    attempts = [log_in(client, "alice@example.com", f"guess{n}") for n in range(30)]
    statuses = [r.status_code for r in await asyncio.gather(*attempts)]
    assert statuses.count(401) == 10
    assert statuses.count(429) == 20


async def test_concurrent_refreshes_with_one_token_let_exactly_one_through(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    account = await sign_up("alice@example.com")
    responses = await asyncio.gather(
        *[
            client.post("/auth/refresh", json={"refresh_token": account.refresh_token})
            for _ in range(5)
        ]
    )
    winners = [r for r in responses if r.status_code == 200]
    assert len(winners) == 1
    # The replay revoked the family, so the winner's successor is dead too.
    successor = winners[0].json()["refresh_token"]
    assert_problem(await client.post("/auth/refresh", json={"refresh_token": successor}), 401)


async def _reset_token(client: httpx.AsyncClient, mailbox: Mailbox, email: str) -> str:
    await client.post("/auth/forgot-password", json={"email": email})
    await mailbox.wait_for(email)
    return mailbox.reset_token(email)


async def test_concurrent_resets_with_one_token_let_exactly_one_through(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox
) -> None:
    await sign_up("alice@example.com")
    token = await _reset_token(client, mailbox, "alice@example.com")
    responses = await asyncio.gather(
        *[reset_password(client, token, f"new pw {n}!") for n in range(5)]
    )
    assert sorted(r.status_code for r in responses) == [200, 400, 400, 400, 400]


@pytest.mark.parametrize(
    ("change", "new_password"),
    [
        pytest.param({"password": "changed it myself"}, "attacker's choice", id="password"),
        pytest.param({"email": "alice@new.example.com"}, "old inbox owner", id="email"),
    ],
)
async def test_a_password_or_email_change_voids_the_reset_links_sent_before_it(
    client: httpx.AsyncClient,
    alice: Account,
    mailbox: Mailbox,
    change: dict[str, str],
    new_password: str,
) -> None:
    token = await _reset_token(client, mailbox, alice.email)
    await change_profile(client, alice, **change)
    assert_problem(await reset_password(client, token, new_password), 400)


async def test_a_delivered_reset_email_no_longer_holds_the_link_in_the_database(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox, runtime: Runtime
) -> None:
    await sign_up("alice@example.com")
    token = await _reset_token(client, mailbox, "alice@example.com")

    async def scrubbed() -> bool:
        async with runtime.db.sessionmaker() as session:
            message = await session.scalar(select(MailMessage))
        return message is not None and message.body == SCRUBBED_BODY

    await eventually(scrubbed)
    async with runtime.db.sessionmaker() as session:
        bodies = (await session.scalars(select(MailMessage.body))).all()
    assert all(token not in body for body in bodies)


async def test_throttle_memory_is_bounded_by_the_window() -> None:
    clock = ManualClock()
    window = SlidingWindow(5, 60, clock)
    for n in range(10_000):
        await window.record(f"victim-{n}@example.com")
    assert len(window) == 10_000
    clock.advance(timedelta(seconds=61))
    await window.record("one-more")
    assert len(window) == 1


def _json_text(body: str, token: str) -> dict[str, object]:
    """Send JSON text as written (httpx itself would refuse NaN)."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    return {"content": body.encode(), "headers": headers}


@pytest.mark.parametrize(
    "config",
    [
        '{"x": NaN}',
        '{"x": Infinity}',
        '{"x": "\\ud800"}',
        '{"x": ' + "[" * 20 + "]" * 20 + "}",
        json.dumps({"x": "y" * 20_000}),
    ],
    ids=["nan", "infinity", "lone-surrogate", "too-deep", "too-large"],
)
async def test_settings_objects_that_no_database_can_store_are_a_422(
    client: httpx.AsyncClient, alice: Account, config: str
) -> None:
    settings = await client.put(
        "/users/settings", **_json_text(f'{{"emailConfig": {config}}}', alice.access_token)
    )
    assert_problem(settings, 422)
    profile = await client.put(
        "/users/me",
        **_json_text(f'{{"settings": {{"webhookConfig": {config}}}}}', alice.access_token),
    )
    assert_problem(profile, 422)


async def test_a_lone_surrogate_in_a_name_is_a_422(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.put(
        "/users/me", **_json_text('{"firstName": "A\\udc00"}', alice.access_token)
    )
    assert_problem(response, 422)


@pytest.mark.parametrize("field", ["subject", "name"])
async def test_contact_header_fields_may_not_carry_line_breaks(
    client: httpx.AsyncClient, field: str
) -> None:
    body = {
        "name": "Dana",
        "email": "d@example.com",
        "subject": "Hi",
        "message": "m",
        field: "Hi\r\nBcc: victim@example.com",
    }
    assert_problem(await client.post("/contact", json=body), 422)


async def test_a_message_that_cannot_be_composed_fails_instead_of_looping(
    runtime: Runtime, mailbox: Mailbox
) -> None:
    async with runtime.db.sessionmaker() as session:
        await runtime.mailer.enqueue(
            session, to="ops@example.com", subject="Two\r\nlines", body="body", category="contact"
        )
        await runtime.mailer.enqueue(
            session, to="bad address@@", subject="s", body="b", category="contact"
        )
        await session.commit()
    await runtime.mailer.deliver_due()
    [sent] = await mailbox.wait_for("ops@example.com")
    assert sent["Subject"] == "Two lines"

    async def rows() -> dict[str, MailMessage]:
        async with runtime.db.sessionmaker() as session:
            return {m.to_address: m for m in (await session.scalars(select(MailMessage))).all()}

    # The sender records each outcome a moment after the server has the message; the point
    # is that the malformed one has its attempt and error recorded rather than looping.
    async def settled() -> bool:
        current = await rows()
        return current["ops@example.com"].status == "sent" and (
            current["bad address@@"].attempts >= 1
        )

    await eventually(settled)
    bad = (await rows())["bad address@@"]
    assert bad.status in ("failed", "pending")
    assert bad.last_error


async def test_unusual_http_methods_share_one_metrics_label(client: httpx.AsyncClient) -> None:
    for method in ("FOO", "BAR", "BAZ"):
        await client.request(method, "/healthz")
    text = (await client.get("/metrics")).text
    assert 'method="FOO"' not in text
    assert 'method="OTHER"' in text


async def test_a_profile_image_must_be_an_http_address(
    client: httpx.AsyncClient, alice: Account
) -> None:
    bad = await change_profile(client, alice, image="javascript:alert(1)")
    assert_problem(bad, 422)
    good = await change_profile(client, alice, image="https://cdn.example.com/a.png")
    assert good.json()["image"] == "https://cdn.example.com/a.png"


def test_a_short_configured_secret_key_is_refused(database_url: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="at least 32"):
        make_settings(database_url, tmp_path, secret_key="short")


def test_a_generated_secret_key_is_kept_and_private(database_url: str, tmp_path: Path) -> None:
    first = make_settings(database_url, tmp_path, secret_key="").signing_key
    second = make_settings(database_url, tmp_path, secret_key="").signing_key
    assert first == second
    assert len(first) >= 32
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]


async def test_login_with_the_right_password_frees_its_address_slot(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    await sign_up("alice@example.com")
    for _ in range(12):
        ok = await log_in(client, "alice@example.com")
        assert ok.status_code == 200
