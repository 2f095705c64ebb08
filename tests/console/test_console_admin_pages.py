"""The plan page in words and the operators' mail outbox and regions, over HTTP."""

from __future__ import annotations

import re

import httpx

from tests.conftest import Account, Cast
from tests.console.forms import signed_in, submit
from upwatch.console.endpoints.account import _count, _frequency, _retention
from upwatch.console.render import words_in
from upwatch.kit.plans import UNLIMITED
from upwatch.models import MailMessage
from upwatch.runtime import Runtime


def test_the_plan_reads_unlimited_limits_and_intervals_in_words() -> None:
    english = words_in("en")
    assert _count(english, UNLIMITED) == "unlimited"
    assert _count(english, float(UNLIMITED)) == "unlimited"
    assert _count(english, 3.0) == "3"
    assert _count(english, 2.5) == "2.5"
    assert _retention(english, UNLIMITED) == "unlimited"
    assert _retention(english, 30) == "30 days"
    assert _frequency(english, 0) == "any interval"
    assert _frequency(english, 5) == "every 5 min"
    assert _frequency(english, 120) == "every 2 h"


async def test_the_plan_page_shows_counts_as_whole_numbers(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await signed_in(client, cast.alice.email)
    page = await client.get("/app/plan")
    assert page.status_code == 200
    assert "every " in page.text or "any interval" in page.text
    assert "e+09" not in page.text


async def _add_failed_mail(runtime: Runtime) -> str:
    """A message a sender gave up on, written straight into the outbox."""
    async with runtime.db.sessionmaker() as session:
        message = MailMessage(
            to_address="ops@example.com",
            subject="Hello there",
            body="body",
            category="contact",
            status="failed",
            attempts=3,
            last_error="550 mailbox unavailable",
            next_attempt_at=runtime.clock.now(),
        )
        session.add(message)
        await session.commit()
        return message.id


async def test_an_admin_reads_the_outbox_and_sends_a_failed_message_again(
    client: httpx.AsyncClient, admin: Account, runtime: Runtime
) -> None:
    mail_id = await _add_failed_mail(runtime)
    csrf = await signed_in(client, admin.email)
    home = await client.get("/app/admin")
    assert home.status_code == 200
    assert 'href="/app/admin/mail"' in home.text
    assert 'href="/app/admin/regions"' in home.text
    page = await client.get("/app/admin/mail")
    assert page.status_code == 200
    assert "Hello there" in page.text
    assert "550 mailbox unavailable" in page.text
    done = await submit(client, f"/app/admin/mail/{mail_id}/resend", csrf)
    assert done.status_code == 303
    assert (
        "The message to ops@example.com is due again." in (await client.get("/app/admin/mail")).text
    )


async def test_resending_without_the_form_token_is_refused(
    client: httpx.AsyncClient, admin: Account, runtime: Runtime
) -> None:
    mail_id = await _add_failed_mail(runtime)
    await signed_in(client, admin.email)
    refused = await client.post(f"/app/admin/mail/{mail_id}/resend", data={})
    assert refused.status_code == 403


async def test_the_outbox_and_regions_do_not_exist_for_a_member(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    for path in ("/app/admin", "/app/admin/mail", "/app/admin/regions"):
        assert (await client.get(path)).status_code == 404, path
    refused = await submit(client, "/app/admin/regions", csrf, code="eu-west", name="EU West")
    assert refused.status_code == 404


async def test_an_admin_adds_a_region_and_deletes_it_after_confirming(
    client: httpx.AsyncClient, admin: Account
) -> None:
    csrf = await signed_in(client, admin.email)
    assert (await client.get("/app/admin/regions")).status_code == 200
    added = await submit(client, "/app/admin/regions", csrf, code="eu-west", name="EU West")
    assert added.status_code == 303
    listed = await client.get("/app/admin/regions")
    assert "EU West" in listed.text
    found = re.search(r'href="(/app/admin/regions/[^"/]+/delete)"', listed.text)
    assert found
    confirm = await client.get(found.group(1))
    assert confirm.status_code == 200
    assert "Delete the region eu-west?" in confirm.text
    deleted = await submit(client, found.group(1), csrf)
    assert deleted.status_code == 303
    assert "EU West" not in (await client.get("/app/admin/regions")).text


async def test_a_bad_or_taken_region_code_is_shown_next_to_the_form(
    client: httpx.AsyncClient, admin: Account
) -> None:
    csrf = await signed_in(client, admin.email)
    bad = await submit(client, "/app/admin/regions", csrf, code="-EU", name="EU")
    assert bad.status_code == 422
    assert 'id="e-code"' in bad.text
    await submit(client, "/app/admin/regions", csrf, code="eu", name="EU")
    taken = await submit(client, "/app/admin/regions", csrf, code="eu", name="EU again")
    assert taken.status_code == 409
    assert "a region with this code exists" in taken.text


async def test_an_unknown_region_is_the_not_found_page(
    client: httpx.AsyncClient, admin: Account
) -> None:
    csrf = await signed_in(client, admin.email)
    assert (await client.get("/app/admin/regions/nope/delete")).status_code == 404
    assert (await submit(client, "/app/admin/regions/nope/delete", csrf)).status_code == 404


async def test_an_admin_sets_an_accounts_roles_and_subscription_status(
    client: httpx.AsyncClient, admin: Account, cast: Cast
) -> None:
    csrf = await signed_in(client, admin.email)
    page = await client.get("/app/admin/users")
    assert 'name="role-project_manager"' in page.text
    done = await submit(
        client,
        f"/app/admin/users/{cast.bob.id}",
        csrf,
        plan="pro",
        roles="1",
        **{"role-user": "on", "role-project_manager": "on"},
        status="past_due",
    )
    assert done.status_code == 303
    listed = (await client.get("/admin/users", headers=admin.headers)).json()
    bob = next(u for u in listed if u["id"] == cast.bob.id)
    assert sorted(bob["roles"]) == ["project_manager", "user"]
    assert bob["subscriptionStatus"] == "past_due"
    none = await submit(client, f"/app/admin/users/{cast.bob.id}", csrf, roles="1")
    assert none.status_code == 303
    assert "Not changed" in (await client.get("/app/admin/users")).text
