"""Visitors subscribe to a page's incident e-mails: double opt-in through a mailed link,
notices on a real SMTP server when an incident opens and resolves, one-click unsubscribe,
throttling, and the owner's list."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from datetime import timedelta
from email.message import Message

import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, Mailbox, assert_problem
from tests.factories import (
    add_component,
    create_incident,
    create_monitor,
    create_page,
    ingest,
    post_in_project,
)
from upwatch.kit.clock import ManualClock
from upwatch.runtime import Runtime

VISITOR = "visitor@example.org"


settings_overrides = overriding(subscribe_requests_allowed=5)


def _text(message: Message) -> str:
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


def _link(message: Message, path: str) -> str:
    """The link to ``path`` in a mailed message, as a path with its query."""
    text = _text(message)
    found = re.search(r"http://upwatch\.test(/s/[^\s]*/" + path + r"\?[^\s]+)", text)
    assert found, text
    return found.group(1)


async def _subscribe(client: httpx.AsyncClient, slug: str, email: str) -> httpx.Response:
    return await client.post(f"/status-pages/public/slug/{slug}/subscribe", json={"email": email})


async def test_a_visitor_confirms_gets_the_outage_and_its_end_and_unsubscribes_in_one_click(
    client: httpx.AsyncClient,
    cast: Cast,
    app: FastAPI,
    clock: ManualClock,
    mailbox: Mailbox,
    as_alice: InProject,
) -> None:
    page = await as_alice.page(slug="shop")
    monitor = await as_alice.monitor(
        name="checkout-7.internal", url="https://checkout.example/health", intervalSeconds=300
    )
    await add_component(client, cast.alice, page["id"], monitor["id"], name="Checkout")

    answer = await _subscribe(client, "shop", "Visitor@Example.org")
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"status": "confirmation_sent"}
    (confirmation,) = await mailbox.wait_for(VISITOR)
    assert confirmation["Subject"] == "Confirm your subscription to Shop status status updates"
    # Unconfirmed, the visitor gets nothing about an outage.
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    assert [(s["email"], s["confirmedAt"]) for s in listed.json()] == [(VISITOR, None)]

    confirmed = await client.get(_link(confirmation, "confirm"))
    assert confirmed.status_code == 200
    assert "Subscribed" in confirmed.text
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    assert listed.json()[0]["confirmedAt"] is not None

    now = clock.now()
    await ingest(app.state.engine, monitor["id"], now - timedelta(minutes=2), ok=False)
    await ingest(app.state.engine, monitor["id"], now - timedelta(minutes=1), ok=True)
    _, opened, resolved = await mailbox.wait_for(VISITOR, count=3)
    assert opened["Subject"] == "Shop status: Checkout is down"
    assert resolved["Subject"] == "Shop status: resolved: Checkout is down"
    assert "Checkout is not responding as it should" in _text(opened)
    assert "Checkout is operating normally again." in _text(resolved)
    for notice in (opened, resolved):
        assert "checkout-7.internal" not in _text(notice)
        assert "checkout.example" not in _text(notice)
        assert notice["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert notice["List-Unsubscribe"].startswith("<http://upwatch.test/s/shop/unsubscribe?")

    # The mail client's one-click POST (RFC 8058) to the List-Unsubscribe address.
    one_click = notice["List-Unsubscribe"].strip("<>").removeprefix("http://upwatch.test")
    gone = await client.post(one_click, content=b"List-Unsubscribe=One-Click")
    assert gone.status_code == 200
    assert "Unsubscribed" in gone.text
    again = await client.get(_link(resolved, "unsubscribe"))  # the link in the text, later
    assert again.status_code == 200
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    assert listed.json() == []
    await ingest(app.state.engine, monitor["id"], now, ok=False)
    incidents = await client.get("/incidents", headers=cast.alice.headers)
    assert any(i["status"] == "investigating" for i in incidents.json())
    assert len(mailbox.to(VISITOR)) == 3


async def test_a_manual_incident_and_its_updates_reach_confirmed_subscribers_as_written(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    monitor = await as_alice.monitor(
        url="https://shop.example/health", intervalSeconds=300, isActive=False
    )
    await add_component(client, cast.alice, page["id"], monitor["id"], name="Shop")
    await _subscribe(client, "shop", VISITOR)
    (confirmation,) = await mailbox.wait_for(VISITOR)
    await client.get(_link(confirmation, "confirm"))
    created = await post_in_project(
        client,
        cast.bob,
        cast.project_id,
        "/incidents",
        monitorId=monitor["id"],
        title="Slow checkout",
        description="Payments take a minute",
    )
    await client.post(
        f"/incidents/{created.json()['id']}/updates",
        headers=cast.bob.headers,
        json={"status": "resolved", "message": "Back to normal"},
    )
    _, opened, resolved = await mailbox.wait_for(VISITOR, count=3)
    assert opened["Subject"] == "Shop status: Slow checkout"
    assert "Payments take a minute" in _text(opened)
    assert resolved["Subject"] == "Shop status: resolved: Slow checkout"
    assert "Back to normal" in _text(resolved)


async def test_links_with_a_wrong_token_do_nothing_and_answer_404(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    await _subscribe(client, "shop", VISITOR)
    (confirmation,) = await mailbox.wait_for(VISITOR)
    link = _link(confirmation, "confirm")
    forged = re.sub(r"token=[^&]+", "token=" + "A" * 43, link)
    assert_problem(await client.get(forged), 404)
    # An unsubscribe token does not confirm, nor the reverse.
    subscriber_id = re.search(r"id=([0-9a-f]+)", link).group(1)  # type: ignore[union-attr]
    assert_problem(await client.get(link.replace("/confirm?", "/unsubscribe?")), 404)
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.alice.headers)
    assert [(s["id"], s["confirmedAt"]) for s in listed.json()] == [(subscriber_id, None)]


async def test_subscribing_is_throttled_per_client_and_per_address_and_needs_a_public_page(
    client: httpx.AsyncClient, mailbox: Mailbox, as_alice: InProject
) -> None:
    await as_alice.page(slug="shop")
    for _ in range(3):
        assert (await _subscribe(client, "shop", VISITOR)).status_code == 202
    too_often = await _subscribe(client, "shop", VISITOR)
    assert "confirmation e-mails" in assert_problem(too_often, 429)["detail"]
    assert int(too_often.headers["Retry-After"]) > 0
    assert len(await mailbox.wait_for(VISITOR, count=3)) == 3
    assert (await _subscribe(client, "shop", "other@example.org")).status_code == 202
    # The client's fifth request in the window was the last one allowed.
    assert_problem(await _subscribe(client, "shop", "third@example.org"), 429)
    bad = await client.post("/status-pages/public/slug/shop/subscribe", json={"email": "nope"})
    assert_problem(bad, 422)


async def test_a_private_page_takes_no_subscribers(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    await as_alice.page(slug="shop", isPublic=False)
    assert_problem(await _subscribe(client, "shop", VISITOR), 404)


async def test_the_pages_own_form_subscribes_without_javascript(
    client: httpx.AsyncClient, mailbox: Mailbox, as_alice: InProject
) -> None:
    await as_alice.page(slug="shop")
    page = await client.get("/s/shop")
    assert 'action="/s/shop/subscribe-form"' in page.text
    sent = await client.post(
        "/s/shop/subscribe-form",
        content=b"email=visitor%40example.org",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert sent.status_code == 200
    assert "Check your inbox" in sent.text
    await mailbox.wait_for(VISITOR)
    wrong = await client.post(
        "/s/shop/subscribe-form",
        content=b"email=%3Cscript%3E",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert wrong.status_code == 422
    assert "<script>" not in wrong.text


async def test_the_owner_removes_a_subscriber_and_charlie_cannot_see_them(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    await _subscribe(client, "shop", VISITOR)
    await mailbox.wait_for(VISITOR)
    url = f"/status-pages/{page['id']}/subscribers"
    (subscriber,) = (await client.get(url, headers=cast.alice.headers)).json()
    assert_problem(await client.get(url, headers=cast.charlie.headers), 404)
    assert_problem(
        await client.delete(f"{url}/{subscriber['id']}", headers=cast.charlie.headers), 404
    )
    removed = await client.delete(f"{url}/{subscriber['id']}", headers=cast.bob.headers)
    assert removed.json() == {"id": subscriber["id"], "deleted": True}
    assert (await client.get(url, headers=cast.alice.headers)).json() == []
    assert_problem(await client.delete(f"{url}/{subscriber['id']}", headers=cast.bob.headers), 404)


async def _bobs_links(client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox) -> tuple[str, str]:
    """A visitor confirmed on Bob's own public page: the confirm link and the unsubscribe
    link mailed to them (paths with their queries)."""
    created = await client.post("/projects", headers=cast.bob.headers, json={"name": "Bob's"})
    assert created.status_code == 201, created.text
    project_id = created.json()["id"]
    page = await create_page(client, cast.bob, project_id, slug="bob-shop", name="Bob shop")
    monitor = await create_monitor(
        client,
        cast.bob,
        project_id,
        url="https://bob.example/health",
        intervalSeconds=300,
        isActive=False,
    )
    await add_component(client, cast.bob, page["id"], monitor["id"])
    await _subscribe(client, "bob-shop", VISITOR)
    (confirmation,) = await mailbox.wait_for(VISITOR)
    confirm = _link(confirmation, "confirm")
    assert (await client.get(confirm)).status_code == 200
    await create_incident(client, cast.bob, project_id, monitorId=monitor["id"])
    _, notice = await mailbox.wait_for(VISITOR, count=2)
    return confirm, _link(notice, "unsubscribe")


async def test_a_non_ascii_token_on_confirm_and_unsubscribe_is_refused_not_a_500(
    client: httpx.AsyncClient, mailbox: Mailbox, as_alice: InProject
) -> None:
    await as_alice.page(slug="shop")
    await _subscribe(client, "shop", VISITOR)
    (confirmation,) = await mailbox.wait_for(VISITOR)
    link = _link(confirmation, "confirm")
    subscriber_id = re.search(r"id=([0-9a-f]+)", link).group(1)  # type: ignore[union-attr]
    for purpose in ("confirm", "unsubscribe"):
        for method in ("GET", "POST") if purpose == "unsubscribe" else ("GET",):
            ascii_token = await client.request(
                method, f"/s/shop/{purpose}", params={"id": subscriber_id, "token": "A" * 43}
            )
            non_ascii = await client.request(
                method, f"/s/shop/{purpose}", params={"id": subscriber_id, "token": "é" * 43}
            )
            assert assert_problem(non_ascii, 404) == assert_problem(ascii_token, 404)


async def test_a_token_for_another_page_is_an_invalid_link_and_names_no_private_page(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    await as_alice.page(slug="alice-private", name="Alice private", isPublic=False)
    created = await client.post("/projects", headers=cast.charlie.headers, json={"name": "C"})
    await create_page(client, cast.charlie, created.json()["id"], slug="charlie-shop")
    confirm, unsubscribe = await _bobs_links(client, cast, mailbox)
    for link in (confirm, unsubscribe):
        path, query = link.split("?", 1)
        wrong = re.sub(r"token=[^&]+", "token=" + "A" * 43, query)
        answers = [
            await client.get(f"/s/{slug}/{path.rsplit('/', 1)[1]}?{q}")
            for slug in ("alice-private", "charlie-shop", "no-such-page")
            for q in (query, wrong)
        ]
        bodies = [assert_problem(answer, 404) for answer in answers]
        assert all(body == bodies[0] for body in bodies), bodies
        assert not any(
            name in answer.text for name in ("Alice private", "Shop status") for answer in answers
        )
    # Bob's visitor is still subscribed: nothing on Alice's pages touched them.
    assert (await client.get(unsubscribe)).status_code == 200


async def test_a_link_mailed_before_tokens_named_their_page_works_on_its_own_page_only(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, runtime: Runtime, as_alice: InProject
) -> None:
    await as_alice.page(slug="alice-private", isPublic=False)
    _, unsubscribe = await _bobs_links(client, cast, mailbox)
    subscriber_id = re.search(r"id=([0-9a-f]+)", unsubscribe).group(1)  # type: ignore[union-attr]
    # The token of such a link: the purpose and subscriber id, no page.
    digest = hmac.new(
        runtime.settings.signing_key.encode(),
        f"unsubscribe:{subscriber_id}".encode(),
        hashlib.sha256,
    ).digest()
    earlier = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    query = f"id={subscriber_id}&token={earlier}"
    assert_problem(await client.get(f"/s/alice-private/unsubscribe?{query}"), 404)
    gone = await client.get(f"/s/bob-shop/unsubscribe?{query}")
    assert gone.status_code == 200
    assert "Bob shop" in gone.text


async def test_a_subscriber_can_leave_a_page_made_private_but_not_confirm_on_it(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox
) -> None:
    confirm, unsubscribe = await _bobs_links(client, cast, mailbox)
    (page,) = (await client.get("/status-pages", headers=cast.bob.headers)).json()
    made_private = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.bob.headers, json={"isPublic": False}
    )
    assert made_private.status_code == 200
    assert_problem(await client.get(confirm), 404)
    assert (await client.get(unsubscribe)).status_code == 200
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    assert listed.json() == []
