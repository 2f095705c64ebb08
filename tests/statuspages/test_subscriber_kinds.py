"""Status-page subscribers beyond e-mail: a webhook subscriber's notices verify with the
Standard Webhooks reference code, a Slack subscriber's reach its incoming webhook (whose URL
stays masked), a subscriber of chosen components hears nothing of the others, and maintenance
is announced, started and ended. Real HTTP to local receivers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from aiohttp import web
from sqlalchemy import func, select
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.app_settings import QUICK_ALERTS, overriding
from tests.conftest import Cast, InProject, assert_problem, eventually
from tests.factories import add_component, create_incident
from tests.receivers import Receiver
from upwatch.kit.clock import ManualClock
from upwatch.models import SubscriberDelivery, SubscriberNotice
from upwatch.runtime import Runtime

settings_overrides = overriding(QUICK_ALERTS, allow_private_targets=True)


async def shop_page(client: httpx.AsyncClient, cast: Cast, as_alice: InProject) -> dict[str, Any]:
    """A page "shop" with components Checkout and Search (each its own paused monitor)."""
    page = await as_alice.page(slug="shop")
    components = {}
    for name in ("Checkout", "Search"):
        monitor = await as_alice.monitor(
            name=name, url=f"https://{name.lower()}.example/", intervalSeconds=300, isActive=False
        )
        component = await add_component(client, cast.alice, page["id"], monitor["id"], name=name)
        components[name] = {"component": component["id"], "monitor": monitor["id"]}
    return {"id": page["id"], **components}


async def add_subscriber(
    client: httpx.AsyncClient, cast: Cast, page_id: str, **body: Any
) -> dict[str, Any]:
    answer = await client.post(
        f"/status-pages/{page_id}/subscribers", headers=cast.bob.headers, json=body
    )
    assert answer.status_code == 201, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def test_a_webhook_subscriber_gets_an_incident_signed_per_standard_webhooks(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject, receiver: Receiver
) -> None:
    page = await shop_page(client, cast, as_alice)
    added = await add_subscriber(client, cast, page["id"], kind="webhook", url=receiver.url())
    assert added["secret"].startswith("whsec_")
    assert added["confirmedAt"] is not None
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    (shown,) = listed.json()
    assert shown["kind"] == "webhook"
    assert shown["url"] == f"http://127.0.0.1:{receiver.port}/****"
    assert "secret" not in shown

    incident = await create_incident(
        client, cast.alice, cast.project_id, monitorId=page["Checkout"]["monitor"]
    )
    await eventually(lambda: len(receiver.to("/hook")) == 1)
    (delivery,) = receiver.to("/hook")
    verified = Webhook(added["secret"]).verify(delivery.body, delivery.headers)
    assert verified["type"] == "incident.opened"
    assert verified["data"]["incident"]["id"] == incident["id"]
    assert verified["data"]["incident"]["components"] == ["Checkout"]
    assert verified["data"]["page"]["url"] == "http://upwatch.test/s/shop"
    assert delivery.headers["webhook-id"].startswith("msg_")
    # The reference code refuses a body changed on the way, and another secret.
    with pytest.raises(WebhookVerificationError):
        Webhook(added["secret"]).verify(
            delivery.body.replace(b"Checkout", b"Chekout"), delivery.headers
        )
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 32).verify(delivery.body, delivery.headers)


async def test_a_slack_subscriber_gets_the_notice_and_its_url_stays_masked_and_kept(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject, receiver: Receiver
) -> None:
    page = await shop_page(client, cast, as_alice)
    hook = receiver.url("/services/T000/B000/secretpart")
    added = await add_subscriber(client, cast, page["id"], kind="slack", url=hook)
    assert added["secret"] is None
    assert added["url"] == f"http://127.0.0.1:{receiver.port}/****"
    # The masked URL sent back keeps the stored one.
    path = f"/status-pages/{page['id']}/subscribers/{added['id']}"
    kept = await client.patch(
        path,
        headers=cast.alice.headers,
        json={"url": added["url"], "componentIds": [page["Search"]["component"]]},
    )
    assert kept.status_code == 200, kept.text
    assert kept.json()["componentIds"] == [page["Search"]["component"]]

    await create_incident(
        client, cast.alice, cast.project_id, monitorId=page["Search"]["monitor"], title="Slow"
    )
    await eventually(lambda: len(receiver.to("/services/T000/B000/secretpart")) == 1)
    (message,) = receiver.to("/services/T000/B000/secretpart")
    assert message.headers["Content-Type"] == "application/json"
    assert json.loads(message.body)["text"].startswith("*Shop status: Slow*")
    assert "secretpart" not in kept.text


async def test_a_subscriber_of_checkout_is_not_told_of_an_incident_on_search(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    receiver: Receiver,
    runtime: Runtime,
) -> None:
    page = await shop_page(client, cast, as_alice)
    checkout = await add_subscriber(
        client,
        cast,
        page["id"],
        kind="webhook",
        url=receiver.url("/checkout"),
        componentIds=[page["Checkout"]["component"]],
    )
    await add_subscriber(client, cast, page["id"], kind="webhook", url=receiver.url("/all"))

    await create_incident(
        client, cast.alice, cast.project_id, monitorId=page["Search"]["monitor"], title="Search"
    )
    await create_incident(
        client, cast.alice, cast.project_id, monitorId=page["Checkout"]["monitor"], title="Pay"
    )
    await eventually(lambda: len(receiver.to("/all")) == 2 and len(receiver.to("/checkout")) == 1)

    async def expanded() -> bool:
        async with runtime.db.workreader() as session:
            waiting = select(func.count()).where(SubscriberNotice.done.is_(False))
            return await session.scalar(waiting) == 0

    await eventually(expanded)
    async with runtime.db.workreader() as session:
        told = await session.scalar(
            select(func.count()).where(SubscriberDelivery.subscriber_id == checkout["id"])
        )
    assert told == 1
    (only,) = receiver.to("/checkout")
    assert json.loads(only.body)["data"]["incident"]["title"] == "Pay"


async def test_maintenance_is_announced_then_started_and_ended_when_its_times_come(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    receiver: Receiver,
    clock: ManualClock,
) -> None:
    page = await shop_page(client, cast, as_alice)
    await add_subscriber(
        client,
        cast,
        page["id"],
        kind="webhook",
        url=receiver.url("/search"),
        componentIds=[page["Search"]["component"]],
    )
    await add_subscriber(client, cast, page["id"], kind="webhook", url=receiver.url("/all"))
    start = clock.now().replace(microsecond=0) + timedelta(hours=1)
    created = await client.post(
        "/maintenance-windows",
        headers=cast.alice.headers,
        json={
            "projectId": cast.project_id,
            "title": "Database upgrade",
            "startsAt": start.isoformat(),
            "endsAt": (start + timedelta(hours=1)).isoformat(),
            "monitorIds": [page["Checkout"]["monitor"]],
        },
    )
    assert created.status_code == 201, created.text

    def events() -> list[str]:
        return [json.loads(r.body)["type"] for r in receiver.to("/all")]

    await eventually(lambda: events() == ["maintenance.announced"])
    clock.advance(timedelta(hours=1, seconds=1))
    await eventually(lambda: events() == ["maintenance.announced", "maintenance.started"])
    clock.advance(timedelta(hours=1))
    await eventually(lambda: len(events()) == 3)
    assert events()[-1] == "maintenance.ended"
    (announced, _, _) = receiver.to("/all")
    data = json.loads(announced.body)["data"]
    assert data["maintenance"]["title"] == "Database upgrade"
    assert data["maintenance"]["components"] == ["Checkout"]
    # The Search subscriber follows another component: nothing came.
    assert receiver.to("/search") == []


# The guard as deployed with loopback allowed (the tests' receivers): 10.1.2.3 is refused.
@pytest.mark.parametrize("settings_overrides", [{"allow_private_targets": False}])
async def test_hook_subscribers_are_guarded_checked_and_walled_by_tenant(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await shop_page(client, cast, as_alice)
    path = f"/status-pages/{page['id']}/subscribers"
    refused = await client.post(
        path, headers=cast.alice.headers, json={"kind": "webhook", "url": "http://10.1.2.3/h"}
    )
    assert assert_problem(refused, 422)["errors"][0]["field"] == "url"
    foreign = await client.post(
        path,
        headers=cast.alice.headers,
        json={"kind": "slack", "url": "http://127.0.0.1:9/h", "componentIds": ["nope"]},
    )
    assert assert_problem(foreign, 422)["errors"][0]["field"] == "componentIds"
    email = await client.post(
        path, headers=cast.alice.headers, json={"kind": "email", "url": "http://127.0.0.1:9/"}
    )
    assert_problem(email, 422)
    charlie = await client.post(
        path, headers=cast.charlie.headers, json={"kind": "slack", "url": "http://127.0.0.1:9/"}
    )
    assert_problem(charlie, 404)


async def test_a_visitor_may_choose_components_of_the_page_only(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await shop_page(client, cast, as_alice)
    url = "/status-pages/public/slug/shop/subscribe"
    chosen = [page["Search"]["component"]]
    answer = await client.post(url, json={"email": "v@example.org", "componentIds": chosen})
    assert answer.status_code == 202, answer.text
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    assert [(s["kind"], s["componentIds"]) for s in listed.json()] == [("email", chosen)]
    wrong = await client.post(url, json={"email": "w@example.org", "componentIds": ["x" * 32]})
    assert assert_problem(wrong, 422)["errors"][0]["field"] == "componentIds"


class AskingReceiver(Receiver):
    """A receiver whose 503 asks for two minutes (Retry-After)."""

    async def handle(self, request: web.Request) -> web.Response:
        answer = await super().handle(request)
        if answer.status == 503:
            answer.headers["Retry-After"] = "120"
        return answer


@pytest.fixture
async def asking() -> AsyncIterator[AskingReceiver]:
    server = AskingReceiver()
    await server.start()
    yield server
    await server.stop()


# Back-off from 0.1 s: only the receiver's Retry-After can make the wait two minutes.
@pytest.mark.parametrize(
    "settings_overrides",
    [{**QUICK_ALERTS, "allow_private_targets": True, "alert_retry_max_seconds": 600.0}],
)
async def test_a_webhook_refused_with_503_is_retried_after_its_retry_after_with_the_same_id(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    asking: AskingReceiver,
    runtime: Runtime,
    clock: ManualClock,
) -> None:
    page = await shop_page(client, cast, as_alice)
    await add_subscriber(client, cast, page["id"], kind="webhook", url=asking.url())
    asking.status = 503
    await create_incident(
        client, cast.alice, cast.project_id, monitorId=page["Checkout"]["monitor"]
    )

    async def delivery() -> SubscriberDelivery | None:
        async with runtime.db.workreader() as session:
            return await session.scalar(select(SubscriberDelivery))

    async def attempted(count: int) -> bool:
        found = await delivery()
        return found is not None and found.attempts == count

    await eventually(lambda: attempted(1))
    first = await delivery()
    assert first is not None
    assert (first.status, first.last_error) == ("pending", "webhook subscriber: HTTP 503: ok")
    assert first.next_attempt_at - clock.now() >= timedelta(seconds=119)

    asking.status = 200
    clock.advance(timedelta(seconds=121))
    await eventually(lambda: attempted(2))
    sent = await delivery()
    assert sent is not None
    assert sent.status == "sent"
    ids = {r.headers["webhook-id"] for r in asking.to("/hook")}
    assert len(asking.to("/hook")) == 2
    assert ids == {first.message_id}


async def test_moving_a_window_moves_its_start_and_end_notices_and_deleting_it_drops_them(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    receiver: Receiver,
    runtime: Runtime,
    clock: ManualClock,
) -> None:
    page = await shop_page(client, cast, as_alice)
    await add_subscriber(client, cast, page["id"], kind="webhook", url=receiver.url())
    start = clock.now().replace(microsecond=0) + timedelta(hours=1)
    created = await client.post(
        "/maintenance-windows",
        headers=cast.alice.headers,
        json={
            "projectId": cast.project_id,
            "title": "Database upgrade",
            "startsAt": start.isoformat(),
            "endsAt": (start + timedelta(hours=1)).isoformat(),
        },
    )
    assert created.status_code == 201, created.text
    window = created.json()["id"]
    await eventually(lambda: len(receiver.to("/hook")) == 1)

    async def notices() -> list[tuple[str, Any, bool]]:
        async with runtime.db.workreader() as session:
            rows = await session.execute(
                select(SubscriberNotice.event, SubscriberNotice.due_at, SubscriberNotice.done)
                .where(SubscriberNotice.maintenance_window_id == window)
                .order_by(SubscriberNotice.event)
            )
            return [tuple(row) for row in rows.all()]

    later = start + timedelta(hours=2)
    moved = await client.patch(
        f"/maintenance-windows/{window}",
        headers=cast.alice.headers,
        json={"startsAt": later.isoformat(), "endsAt": (later + timedelta(hours=1)).isoformat()},
    )
    assert moved.status_code == 200, moved.text
    pending = [(event, due) for event, due, done in await notices() if not done]
    assert pending == [
        ("maintenance.ended", later + timedelta(hours=1)),
        ("maintenance.started", later),
    ]
    # Announced once: an edit is not a second announcement.
    assert [event for event, _, _ in await notices()].count("maintenance.announced") == 1

    gone = await client.delete(f"/maintenance-windows/{window}", headers=cast.alice.headers)
    assert gone.status_code == 200, gone.text
    assert await notices() == []


async def test_the_pages_own_form_offers_the_components_and_keeps_the_choice(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await shop_page(client, cast, as_alice)
    shown = await client.get("/s/shop")
    search = page["Search"]["component"]
    assert f'name="componentIds" value="{search}"' in shown.text
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    sent = await client.post(
        "/s/shop/subscribe-form",
        content=f"email=v%40example.org&componentIds={search}".encode(),
        headers=form,
    )
    assert sent.status_code == 200, sent.text
    assert "Check your inbox" in sent.text
    everything = await client.post(
        "/s/shop/subscribe-form", content=b"email=w%40example.org", headers=form
    )
    assert everything.status_code == 200
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.bob.headers)
    chosen = {s["email"]: s["componentIds"] for s in listed.json()}
    assert chosen == {"v@example.org": [search], "w@example.org": None}
    stale = await client.post(
        "/s/shop/subscribe-form",
        content=b"email=x%40example.org&componentIds=gone",
        headers=form,
    )
    assert stale.status_code == 422
    assert "Not subscribed" in stale.text


async def test_an_incident_without_a_monitor_reaches_the_subscribers_of_what_it_was_placed_on(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject, receiver: Receiver
) -> None:
    page = await shop_page(client, cast, as_alice)
    await add_subscriber(
        client,
        cast,
        page["id"],
        kind="webhook",
        url=receiver.url("/search"),
        componentIds=[page["Search"]["component"]],
    )
    await add_subscriber(
        client,
        cast,
        page["id"],
        kind="webhook",
        url=receiver.url("/checkout"),
        componentIds=[page["Checkout"]["component"]],
    )

    # Placed on Checkout only: the subscriber of Search hears nothing of it.
    await create_incident(
        client,
        cast.alice,
        cast.project_id,
        title="Card payments fail",
        componentIds=[page["Checkout"]["component"]],
    )
    await eventually(lambda: len(receiver.to("/checkout")) == 1)
    (told,) = receiver.to("/checkout")
    assert json.loads(told.body)["data"]["incident"]["components"] == ["Checkout"]
    # Placed on the whole page: it touches every component, so both hear of it.
    await create_incident(
        client,
        cast.alice,
        cast.project_id,
        title="Database maintenance overrun",
        severity="high",
        statusPageIds=[page["id"]],
    )
    await eventually(
        lambda: len(receiver.to("/checkout")) == 2 and len(receiver.to("/search")) == 1
    )
    (whole,) = receiver.to("/search")
    assert json.loads(whole.body)["data"]["incident"]["title"] == "Database maintenance overrun"
