"""Mail without SMTP is usable: the whole message in the log, and the admin's outbox view
(GET /admin/mail) with resend (issue 12)."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.app_settings import overriding
from tests.conftest import PASSWORD, Account, Mailbox, SignUp, assert_problem, eventually
from tests.factories import create_page, log_in, reset_password
from upwatch.kit.logs import json_formatter
from upwatch.mail.sender import SCRUBBED_BODY, masked_body
from upwatch.models import MailMessage
from upwatch.runtime import Runtime
from upwatch.statuspages.subscribers import CONFIRM_CATEGORY, NOTICE_CATEGORY

Promote = Callable[[Account, str], Awaitable[None]]


async def _add_message(runtime: Runtime, **values: Any) -> str:
    """A message written straight into the outbox, as a sender left it."""
    fields: dict[str, Any] = {
        "to_address": "ops@example.com",
        "subject": "Hello",
        "body": "body",
        "category": "contact",
        "next_attempt_at": runtime.clock.now(),
        **values,
    }
    async with runtime.db.sessionmaker() as session:
        message = MailMessage(**fields)
        session.add(message)
        await session.commit()
        return message.id


async def _message(runtime: Runtime, message_id: str) -> MailMessage:
    async with runtime.db.sessionmaker() as session:
        message = await session.get(MailMessage, message_id)
    assert message is not None
    return message


def test_only_tokens_in_sensitive_mail_are_masked_wherever_the_body_repeats_them() -> None:
    token = "abc-DEF_123-ghi_456"
    body = (
        f"Project ?token=e invites you: http://up.test/invitations/accept?token={token}&x=1\n"
        f"Invitation token: {token}\n"
    )
    masked = masked_body("project_invitation", body)
    assert token not in masked
    assert "accept?token=****&x=1" in masked
    assert "Invitation token: ****" in masked
    assert "Project ?token=e invites you" in masked  # user text, not a token: left whole
    reset = masked_body("password_reset", f"http://up.test/reset-password?token={token}")
    assert reset == "http://up.test/reset-password?token=****"
    assert masked_body("contact", body) == body


async def test_status_page_subscribers_confirm_and_unsubscribe_tokens_are_masked_for_admins(
    client: httpx.AsyncClient,
    sign_up: SignUp,
    admin: Account,
    mailbox: Mailbox,
    runtime: Runtime,
) -> None:
    alice = await sign_up("alice@example.com")
    project = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
    await create_page(client, alice, project.json()["id"], slug="shop")
    visitor = "visitor@example.org"
    subscribed = await client.post(
        "/status-pages/public/slug/shop/subscribe", json={"email": visitor}
    )
    assert subscribed.status_code == 202, subscribed.text
    [confirmation] = await mailbox.wait_for(visitor)
    payload = confirmation.get_payload(decode=True)
    assert isinstance(payload, bytes)
    confirm = re.search(r"/confirm\?id=[\w-]+&token=([\w-]+)", payload.decode())
    assert confirm, payload
    # An incident notice as the status page writes it, with its one-click unsubscribe link.
    unsubscribe = "uNsUbScRiBe-t0ken_0123456789abcdefghijklmnopq"
    await _add_message(
        runtime,
        to_address=visitor,
        subject="Shop status: Checkout is down",
        body=f"Unsubscribe with one click: http://upwatch.test/s/shop/unsubscribe?id=s1&token={unsubscribe}\n",
        category=NOTICE_CATEGORY,
    )

    response = await client.get("/admin/mail", headers=admin.headers)
    assert response.status_code == 200, response.text
    bodies = {m["category"]: m["body"] for m in response.json()}
    assert "/confirm?id=" in bodies[CONFIRM_CATEGORY]
    assert "&token=****" in bodies[CONFIRM_CATEGORY]
    assert "/s/shop/unsubscribe?id=s1&token=****" in bodies[NOTICE_CATEGORY]
    assert confirm.group(1) not in response.text
    assert unsubscribe not in response.text


async def test_the_outbox_view_needs_a_token_and_an_admin(
    client: httpx.AsyncClient, alice: Account
) -> None:
    for method, path in (("GET", "/admin/mail"), ("POST", "/admin/mail/x/resend")):
        assert_problem(await client.request(method, path), 401)
        assert_problem(await client.request(method, path, headers=alice.headers), 403)


class TestWithoutSmtp:
    settings_overrides = overriding(smtp_host="")

    async def test_a_reset_mail_is_logged_whole_and_its_link_works(
        self, client: httpx.AsyncClient, sign_up: SignUp, caplog: pytest.LogCaptureFixture
    ) -> None:
        await sign_up("alice@example.com")
        with caplog.at_level(logging.INFO, logger="upwatch.mail.sender"):
            await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
        [logged] = [r for r in caplog.records if getattr(r, "event", None) == "mail.logged"]
        assert logged.levelno == logging.INFO
        text = logged.getMessage()
        assert "    To: alice@example.com" in text
        assert "    Subject: Reset your Upwatch password" in text
        match = re.search(r"http://upwatch\.test/reset-password\?token=([\w-]+)", text)
        assert match, text

        reset = await reset_password(client, match.group(1), "a new password")
        assert reset.status_code == 200, reset.text
        login = await log_in(client, "alice@example.com", "a new password")
        assert login.status_code == 200

    async def test_admins_list_the_outbox_newest_first_with_tokens_masked(
        self,
        client: httpx.AsyncClient,
        sign_up: SignUp,
        admin: Account,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        alice = await sign_up("alice@example.com")
        project = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
        with caplog.at_level(logging.INFO, logger="upwatch.mail.sender"):
            await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
            invited = await client.post(
                f"/projects/{project.json()['id']}/users",
                headers=alice.headers,
                json={"email": "dave@example.com"},
            )
            assert invited.status_code == 201
            contact = await client.post(
                "/contact",
                json={
                    "name": "Carol",
                    "email": "carol@example.com",
                    "subject": "Hi",
                    "message": "see http://example.com/?token=not-a-secret\n"
                    "2026-01-01 ERROR upwatch a line that is not the service's",
                },
            )
            assert contact.status_code == 201
        [contact_logged] = [
            r
            for r in caplog.records
            if (getattr(r, "event", None), getattr(r, "category", None))
            == ("mail.logged", "contact")
        ]
        # What a person wrote stays inside the record: every line of it is indented.
        assert "\n    2026-01-01 ERROR upwatch" in contact_logged.getMessage()
        tokens = re.findall(r"token=([\w-]+)", caplog.text)
        assert len(tokens) >= 3  # reset link, invitation link, the contact message's text

        response = await client.get("/admin/mail", headers=admin.headers)
        assert response.status_code == 200
        assert response.headers["X-Total-Count"] == "3"
        items = response.json()
        assert [m["category"] for m in items] == ["contact", "project_invitation", "password_reset"]
        contact_mail, invitation, reset = items
        assert reset["to"] == "alice@example.com"
        assert reset["subject"] == "Reset your Upwatch password"
        assert (reset["status"], reset["attempts"], reset["sentAt"]) == ("pending", 0, None)
        assert reset["nextAttemptAt"].endswith("Z")
        assert "http://upwatch.test/reset-password?token=****" in reset["body"]
        assert "token=****" in invitation["body"]
        assert "Invitation token: ****" in invitation["body"]
        assert "token=not-a-secret" in contact_mail["body"]  # no secret in that category
        secrets = [t for t in tokens if t != "not-a-secret"]
        assert secrets
        assert not any(token in response.text for token in secrets)

        first = await client.get("/admin/mail?limit=2", headers=admin.headers)
        rest = await client.get("/admin/mail?limit=2&offset=2", headers=admin.headers)
        assert [m["id"] for m in first.json() + rest.json()] == [m["id"] for m in items]
        assert_problem(await client.get("/admin/mail?limit=0", headers=admin.headers), 422)

    async def test_resending_writes_the_message_to_the_log_again(
        self,
        client: httpx.AsyncClient,
        admin: Account,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        await client.post("/auth/forgot-password", json={"email": "admin@example.com"})
        [message] = (await client.get("/admin/mail", headers=admin.headers)).json()
        with caplog.at_level(logging.INFO, logger="upwatch.mail.sender"):
            response = await client.post(
                f"/admin/mail/{message['id']}/resend", headers=admin.headers
            )
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "pending"
        assert "token=****" in response.json()["body"]
        [logged] = [r for r in caplog.records if getattr(r, "event", None) == "mail.logged"]
        assert re.search(r"/reset-password\?token=[\w-]{20,}", logged.getMessage())

    async def test_resending_an_unknown_message_is_a_404(
        self, client: httpx.AsyncClient, admin: Account
    ) -> None:
        assert_problem(await client.post("/admin/mail/nosuch/resend", headers=admin.headers), 404)


class TestWithSmtp:
    async def test_nothing_of_a_message_is_logged_and_no_token_reaches_the_json_log(
        self,
        client: httpx.AsyncClient,
        alice: Account,
        mailbox: Mailbox,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        project = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
        caplog.set_level(logging.INFO)  # the service's level (kit/logs.py)
        await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
        await client.post(
            f"/projects/{project.json()['id']}/users",
            headers=alice.headers,
            json={"email": "dave@example.com"},
        )
        await mailbox.wait_for("alice@example.com")
        await mailbox.wait_for("dave@example.com")
        tokens = [
            mailbox.reset_token("alice@example.com"),
            mailbox.invitation_token("dave@example.com"),
        ]
        assert not [r for r in caplog.records if getattr(r, "event", None) == "mail.logged"]
        formatter = json_formatter()
        # mail.log is aiosmtpd's: the test's receiving server, not the service.
        service = [r for r in caplog.records if not r.name.startswith("mail.log")]
        written = "\n".join(formatter.format(r) for r in service)
        assert not any(token in written for token in tokens)

    async def test_a_failed_message_is_resent_and_delivered(
        self,
        client: httpx.AsyncClient,
        admin: Account,
        runtime: Runtime,
        mailbox: Mailbox,
    ) -> None:
        failed = await _add_message(
            runtime, status="failed", attempts=30, last_error="554 Message rejected"
        )
        response = await client.post(f"/admin/mail/{failed}/resend", headers=admin.headers)
        assert response.status_code == 200, response.text
        assert (response.json()["status"], response.json()["attempts"]) == ("pending", 0)
        [received] = await mailbox.wait_for("ops@example.com")
        assert received["Subject"] == "Hello"

        async def recorded_sent() -> bool:
            return (await _message(runtime, failed)).status == "sent"

        await eventually(recorded_sent)
        listed = (await client.get("/admin/mail", headers=admin.headers)).json()
        sent = next(m for m in listed if m["id"] == failed)
        assert (sent["status"], sent["attempts"], sent["nextAttemptAt"]) == ("sent", 1, None)

        again = assert_problem(
            await client.post(f"/admin/mail/{failed}/resend", headers=admin.headers), 409
        )
        assert "only unsent messages" in again["detail"]
        assert len(mailbox.to("ops@example.com")) == 1

    async def test_a_failed_reset_mail_whose_link_was_removed_is_not_resent(
        self, client: httpx.AsyncClient, admin: Account, runtime: Runtime
    ) -> None:
        failed = await _add_message(
            runtime, category="password_reset", status="failed", body=SCRUBBED_BODY
        )
        problem = assert_problem(
            await client.post(f"/admin/mail/{failed}/resend", headers=admin.headers), 409
        )
        assert "ask for a new one" in problem["detail"]
        assert (await _message(runtime, failed)).status == "failed"


async def test_invitation_mail_no_longer_holds_its_token_once_delivered(
    client: httpx.AsyncClient, alice: Account, mailbox: Mailbox, runtime: Runtime
) -> None:
    project = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
    await client.post(
        f"/projects/{project.json()['id']}/users",
        headers=alice.headers,
        json={"email": "dave@example.com"},
    )
    await mailbox.wait_for("dave@example.com")
    token = mailbox.invitation_token("dave@example.com")

    async def scrubbed() -> bool:
        async with runtime.db.sessionmaker() as session:
            bodies = (await session.scalars(select(MailMessage.body))).all()
        return bodies == [SCRUBBED_BODY]

    await eventually(scrubbed)
    # The token still works: only the stored copy is gone.
    signup = await client.post(
        "/auth/signup",
        json={"email": "dave@example.com", "password": PASSWORD, "invitationToken": token},
    )
    assert signup.status_code == 201
