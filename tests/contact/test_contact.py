"""The contact form (seed 15, 16; contract §13)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.conftest import Account, Mailbox, SignUp, assert_problem

Promote = Callable[[Account, str], Awaitable[None]]

MESSAGE = {
    "name": "Dana",
    "email": "dana@example.com",
    "subject": "Pricing",
    "message": "Do you offer a plan for charities?",
}


async def _submission_id(client: httpx.AsyncClient, admin: Account) -> str:
    listing = await client.get("/contact", headers=admin.headers)
    assert listing.status_code == 200
    return str(listing.json()[0]["id"])


async def test_a_contact_message_is_stored_and_emailed_to_every_admin(
    client: httpx.AsyncClient, admin: Account, mailbox: Mailbox
) -> None:
    response = await client.post("/contact", json=MESSAGE)
    assert response.status_code == 201
    assert response.json()["message"]
    mails = await mailbox.wait_for("admin@example.com")
    assert "Pricing" in str(mails[0]["Subject"])
    body = mails[0].get_payload(decode=True)
    assert isinstance(body, bytes)
    assert b"dana@example.com" in body
    assert b"charities" in body

    listing = await client.get("/contact", headers=admin.headers)
    item = listing.json()[0]
    assert (item["name"], item["contacted"], item["admin_notes"]) == ("Dana", False, None)


@pytest.mark.parametrize("settings_overrides", [{"admin_email": "ops@example.com"}])
async def test_the_operator_address_receives_contact_mail_when_configured(
    client: httpx.AsyncClient, admin: Account, mailbox: Mailbox
) -> None:
    await client.post("/contact", json=MESSAGE)
    await mailbox.wait_for("ops@example.com")
    assert mailbox.to("admin@example.com") == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "D"}, "name"),
        ({"name": "D" * 101}, "name"),
        ({"subject": "s" * 201}, "subject"),
        ({"message": "m" * 5001}, "message"),
        ({"email": "not-an-address"}, "email"),
        ({"email": None}, "email"),
    ],
)
async def test_contact_fields_outside_their_bounds_are_a_422(
    client: httpx.AsyncClient, change: dict[str, Any], field: str
) -> None:
    problem = assert_problem(await client.post("/contact", json={**MESSAGE, **change}), 422)
    assert field in [e["field"] for e in problem["errors"]]


async def test_contact_fields_at_their_bounds_are_accepted(client: httpx.AsyncClient) -> None:
    body = {**MESSAGE, "name": "Jo", "subject": "s" * 200, "message": "m" * 5000}
    assert (await client.post("/contact", json=body)).status_code == 201
    body = {**MESSAGE, "name": "N" * 100}
    assert (await client.post("/contact", json=body)).status_code == 201


async def test_contact_submissions_are_throttled_per_client_address(
    client: httpx.AsyncClient,
) -> None:
    for _ in range(5):
        assert (await client.post("/contact", json=MESSAGE)).status_code == 201
    response = await client.post("/contact", json=MESSAGE)
    assert_problem(response, 429)
    assert int(response.headers["Retry-After"]) > 0


async def test_listing_contact_submissions_is_for_admins(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    bob = await sign_up("bob@example.com")
    assert_problem(await client.get("/contact"), 401)
    assert_problem(await client.get("/contact", headers=bob.headers), 403)


async def test_following_up_needs_a_token_an_admin_and_a_known_id(
    client: httpx.AsyncClient, sign_up: SignUp, admin: Account
) -> None:
    await client.post("/contact", json=MESSAGE)
    submission = await _submission_id(client, admin)
    bob = await sign_up("bob@example.com")
    assert_problem(await client.patch(f"/contact/{submission}"), 401)
    assert_problem(await client.patch(f"/contact/{submission}", headers=bob.headers), 403)
    assert_problem(await client.patch("/contact/unknown", headers=admin.headers), 404)


async def test_an_empty_follow_up_marks_the_submission_contacted(
    client: httpx.AsyncClient, admin: Account
) -> None:
    await client.post("/contact", json=MESSAGE)
    submission = await _submission_id(client, admin)
    response = await client.patch(f"/contact/{submission}", headers=admin.headers)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "id",
        "name",
        "email",
        "subject",
        "message",
        "contacted",
        "admin_notes",
        "createdAt",
        "updatedAt",
    }
    assert body["contacted"] is True
    assert body["admin_notes"] is None
    empty_object = await client.patch(f"/contact/{submission}", headers=admin.headers, json={})
    assert empty_object.json()["contacted"] is True


async def test_a_follow_up_body_sets_notes_and_can_clear_contacted(
    client: httpx.AsyncClient, admin: Account
) -> None:
    await client.post("/contact", json=MESSAGE)
    submission = await _submission_id(client, admin)
    noted = await client.patch(
        f"/contact/{submission}",
        headers=admin.headers,
        json={"admin_notes": "called back on Monday"},
    )
    assert noted.json()["admin_notes"] == "called back on Monday"
    assert noted.json()["contacted"] is True
    undone = await client.patch(
        f"/contact/{submission}", headers=admin.headers, json={"contacted": False}
    )
    assert undone.json()["contacted"] is False
    assert undone.json()["admin_notes"] == "called back on Monday"


async def test_a_follow_up_body_that_is_not_an_object_is_a_400(
    client: httpx.AsyncClient, admin: Account
) -> None:
    await client.post("/contact", json=MESSAGE)
    submission = await _submission_id(client, admin)
    response = await client.patch(f"/contact/{submission}", headers=admin.headers, json=[1, 2])
    assert_problem(response, 400)
    response = await client.patch(
        f"/contact/{submission}", headers=admin.headers, json={"contacted": "maybe"}
    )
    assert_problem(response, 422)
