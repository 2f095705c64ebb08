"""Alerting end to end: real failing checks open one incident, every enabled provider gets
one alert, recovery resolves it; delivery survives a receiver outage and a restart."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from standardwebhooks import Webhook

from tests.app_settings import QUICK_ALERTS, overriding
from tests.conftest import (
    Cast,
    Mailbox,
    _empty_tables,
    assert_problem,
    eventually,
    free_port,
    lifespan,
)
from tests.factories import Target, create_provider, log_in
from tests.receivers import Received, Receiver
from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.kit.clock import Clock
from upwatch.models import Alert, AlertAttempt
from upwatch.runtime import Runtime

SECRET_A = "first-signing-secret-0001"
SECRET_B = "second-signing-secret-002"
STANDARD_SECRET = "whsec_" + base64.b64encode(b"a key of 32 bytes for the tests.").decode()


@pytest.fixture
def clock() -> Clock:
    return Clock()  # retries and back-off run on real time


settings_overrides = overriding(QUICK_ALERTS, allow_private_targets=True)


def assert_signed(received: Received, secret: str) -> None:
    expected = hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    signature = received.headers["X-Upwatch-Signature"]
    assert hmac.compare_digest(signature, f"sha256={expected}")


async def _add_provider(
    client: httpx.AsyncClient, headers: dict[str, str], project_id: str, **fields: Any
) -> str:
    return str((await create_provider(client, headers, project_id, **fields))["id"])


async def _check(client: httpx.AsyncClient, headers: dict[str, str], monitor_id: str) -> str:
    response = await client.post(f"/monitors/{monitor_id}/check", headers=headers)
    assert response.status_code == 200, response.text
    monitor = await client.get(f"/monitors/{monitor_id}", headers=headers)
    return str(monitor.json()["status"])


async def test_an_outage_opens_one_incident_alerts_each_enabled_provider_once_and_recovery_resolves_it(  # noqa: E501
    client: httpx.AsyncClient,
    cast: Cast,
    receiver: Receiver,
    target: Target,
    mailbox: Mailbox,
) -> None:
    headers = cast.alice.headers
    project = cast.project_id
    for kind, name, config, extra in (
        ("webhook", "Ops hook", {"url": receiver.url("/a"), "secret": SECRET_A}, {}),
        ("webhook", "Audit hook", {"url": receiver.url("/b"), "secret": SECRET_B}, {}),
        ("slack", "Slack", {"webhookUrl": receiver.url("/slack")}, {}),
        ("webhook", "Retired", {"url": receiver.url("/off")}, {"isEnabled": False}),
        ("email", "Mail", {"to": ["oncall@example.com"]}, {}),
    ):
        await _add_provider(client, headers, project, type=kind, name=name, config=config, **extra)
    created = await client.post(
        "/monitors",
        headers=headers,
        json={
            "projectId": project,
            "name": "Checkout",
            "type": "http",
            "url": target.url,
            "retries": 1,
        },
    )
    assert created.status_code == 201, created.text
    monitor_id = created.json()["id"]

    async def first_check_done() -> bool:
        got = await client.get(f"/monitors/{monitor_id}", headers=headers)
        return got.json()["status"] == "up"

    await eventually(first_check_done)  # the scheduled first check; the next is minutes away

    target.status = 503
    assert await _check(client, headers, monitor_id) == "up"  # within the retries
    assert await _check(client, headers, monitor_id) == "down"
    assert await _check(client, headers, monitor_id) == "down"  # the same outage

    # The cast's invitation to Bob is in the mailbox too: wait for the provider's own e-mail.
    await eventually(
        lambda: len(receiver.received) >= 3 and len(mailbox.to("oncall@example.com")) >= 1
    )
    incidents = (
        await client.get("/incidents", headers=headers, params={"monitorId": monitor_id})
    ).json()
    assert len(incidents) == 1
    incident = incidents[0]
    assert (incident["automatic"], incident["severity"], incident["status"]) == (
        True,
        "high",
        "investigating",
    )
    (a,) = receiver.to("/a")
    (b,) = receiver.to("/b")
    assert_signed(a, SECRET_A)
    assert_signed(b, SECRET_B)
    opened = a.json()
    assert opened["event"] == "incident.opened"
    assert opened["monitor"]["name"] == "Checkout"
    assert opened["failure"]["kind"] == "status_code"
    assert opened["failure"]["statusCode"] == 503
    assert opened["incident"]["id"] == incident["id"]
    # A page a person can open in a browser: the console's, after signing in if need be.
    link = opened["incident"]["url"]
    assert link == f"http://upwatch.test/app/incidents/{incident['id']}"
    opening = await client.get(link)
    assert opening.headers["location"] == f"/app/login?next=%2Fapp%2Fincidents%2F{incident['id']}"
    assert opened["incident"]["startedAt"] == incident["startedAt"]
    assert "DOWN: Checkout" in receiver.to("/slack")[0].json()["text"]
    assert mailbox.to("oncall@example.com")[0]["Subject"] == "DOWN: Checkout"
    assert receiver.to("/off") == []

    target.status = 200
    assert await _check(client, headers, monitor_id) == "up"
    await eventually(
        lambda: len(receiver.received) >= 6 and len(mailbox.to("oncall@example.com")) >= 2
    )
    resolved = (await client.get(f"/incidents/{incident['id']}", headers=headers)).json()
    assert resolved["status"] == "resolved"
    assert resolved["resolvedAt"] is not None
    assert [u["status"] for u in resolved["updates"]] == ["investigating", "resolved"]
    recovery = receiver.to("/a")[1]
    assert_signed(recovery, SECRET_A)
    assert recovery.json()["event"] == "incident.resolved"
    assert recovery.json()["incident"]["durationSeconds"] > 0
    assert_signed(receiver.to("/b")[1], SECRET_B)
    assert "UP: Checkout is back after" in receiver.to("/slack")[1].json()["text"]

    async def history_settled() -> bool:
        alerts = await client.get(f"/incidents/{incident['id']}/alerts", headers=headers)
        return all(a["status"] != "pending" for a in alerts.json())

    await eventually(history_settled)
    alerts = (await client.get(f"/incidents/{incident['id']}/alerts", headers=headers)).json()
    summary = sorted((a["providerName"], a["event"], a["status"]) for a in alerts)
    assert summary == sorted(
        [
            (name, event, "suppressed" if name == "Retired" else "sent")
            for name in ("Ops hook", "Audit hook", "Slack", "Retired", "Mail")
            for event in ("incident.opened", "incident.resolved")
        ]
    )
    for alert in alerts:
        if alert["status"] == "sent":
            assert [t["outcome"] for t in alert["attempts"]] == ["sent"]
        else:
            assert alert["reason"] == "provider disabled"
    # Nothing arrives twice: several retry periods later the counts are the same.
    await asyncio.sleep(1)
    assert len(receiver.received) == 6
    assert len(mailbox.to("oncall@example.com")) == 2
    assert len({r.headers["X-Upwatch-Delivery"] for r in receiver.received}) == 6


async def test_the_test_button_answers_true_when_delivered_and_false_when_not(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver
) -> None:
    headers = cast.alice.headers
    provider = await _add_provider(
        client,
        headers,
        cast.project_id,
        type="webhook",
        name="Hook",
        config={"url": receiver.url("/t"), "secret": SECRET_A},
    )
    sent = await client.post(f"/notification-providers/{provider}/test", headers=headers)
    assert sent.status_code == 200
    assert sent.json() is True
    (message,) = receiver.to("/t")
    assert message.json()["event"] == "test"
    assert_signed(message, SECRET_A)
    receiver.status = 500
    failed = await client.post(f"/notification-providers/{provider}/test", headers=headers)
    assert failed.status_code == 200
    assert failed.json() is False


async def test_the_test_button_is_rate_limited_per_account(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver
) -> None:
    provider = await _add_provider(
        client,
        cast.alice.headers,
        cast.project_id,
        type="webhook",
        name="Hook",
        config={"url": receiver.url("/t")},
    )
    url = f"/notification-providers/{provider}/test"
    for _ in range(20):
        assert (await client.post(url, headers=cast.alice.headers)).status_code == 200
    limited = assert_problem(await client.post(url, headers=cast.alice.headers), 429)
    assert limited["status"] == 429


# ---- retries: one message id, Retry-After honoured ----


async def _failing_monitor(
    client: httpx.AsyncClient, headers: dict[str, str], project_id: str, target: Target
) -> str:
    """A monitor that is down now; the id of the incident it opened."""
    monitor = await client.post(
        "/monitors",
        headers=headers,
        json={"projectId": project_id, "name": "API", "type": "http", "url": target.url},
    )
    assert monitor.status_code == 201, monitor.text
    target.status = 500
    assert await _check(client, headers, monitor.json()["id"]) == "down"
    incidents = (await client.get("/incidents", headers=headers)).json()
    return str(incidents[0]["id"])


async def test_every_retry_of_an_alert_carries_its_webhook_id_and_verifies(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target
) -> None:
    headers = cast.alice.headers
    config = {"url": receiver.url("/s"), "secret": STANDARD_SECRET}
    await _add_provider(client, headers, cast.project_id, type="webhook", name="S", config=config)
    receiver.status = 503
    await _failing_monitor(client, headers, cast.project_id, target)

    await eventually(lambda: len(receiver.to("/s")) >= 2)
    receiver.status = 200

    async def delivered() -> bool:
        alerts = await client.get("/incidents", headers=headers)
        incident_id = alerts.json()[0]["id"]
        history = await client.get(f"/incidents/{incident_id}/alerts", headers=headers)
        return [a["status"] for a in history.json()] == ["sent"]

    await eventually(delivered)
    attempts = receiver.to("/s")
    assert len(attempts) >= 3
    assert len({r.headers["webhook-id"] for r in attempts}) == 1
    assert attempts[0].headers["webhook-id"] == attempts[0].headers["X-Upwatch-Delivery"]
    for received in attempts:
        Webhook(STANDARD_SECRET).verify(received.body, received.headers)


class TestRetryAfter:
    # A long cap, so that the receiver's wish is what sets the wait.
    settings_overrides = overriding(
        QUICK_ALERTS, allow_private_targets=True, alert_retry_max_seconds=600.0
    )

    @pytest.mark.parametrize(
        ("status", "retry_after", "wait"), [(429, "120", 120), (503, "86400", 600)]
    )
    async def test_a_receiver_that_asks_for_a_pause_is_retried_no_sooner_and_at_most_at_the_cap(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        receiver: Receiver,
        target: Target,
        runtime: Runtime,
        status: int,
        retry_after: str,
        wait: int,
    ) -> None:
        headers = cast.alice.headers
        config = {"url": receiver.url("/busy")}
        await _add_provider(
            client, headers, cast.project_id, type="webhook", name="B", config=config
        )
        receiver.status, receiver.headers = status, {"Retry-After": retry_after}
        incident_id = await _failing_monitor(client, headers, cast.project_id, target)

        async def attempted() -> bool:
            history = await client.get(f"/incidents/{incident_id}/alerts", headers=headers)
            return any(a["attempts"] for a in history.json())

        await eventually(attempted)
        async with runtime.db.sessionmaker() as session:
            alert = (await session.scalars(select(Alert))).one()
            attempt = (await session.scalars(select(AlertAttempt))).one()
        assert (alert.status, attempt.outcome) == ("pending", "retry")
        assert alert.next_attempt_at - attempt.attempted_at == timedelta(seconds=wait)
        assert len(receiver.to("/busy")) == 1


# ---- receiver down, service restarted: each alert delivered exactly once ----


async def test_alerts_wait_out_a_receiver_outage_and_a_restart_and_arrive_exactly_once(
    settings: Settings, database_url: str, target: Target
) -> None:
    hook = Receiver(port=free_port())  # down: nothing listens on its port yet
    try:
        async with _service(settings) as client:
            signup = await client.post(
                "/auth/signup", json={"email": "dana@example.com", "password": "long enough pw"}
            )
            headers = {"Authorization": f"Bearer {signup.json()['access_token']}"}
            project = (await client.post("/projects", headers=headers, json={"name": "P"})).json()
            await _add_provider(
                client,
                headers,
                project["id"],
                type="webhook",
                name="Hook",
                config={"url": hook.url("/h"), "secret": SECRET_A},
            )
            monitor = await client.post(
                "/monitors",
                headers=headers,
                json={"projectId": project["id"], "name": "API", "type": "http", "url": target.url},
            )
            monitor_id = monitor.json()["id"]
            target.status = 500
            assert await _check(client, headers, monitor_id) == "down"
            incident_id = (await client.get("/incidents", headers=headers)).json()[0]["id"]

            async def retried() -> bool:
                alerts = await client.get(f"/incidents/{incident_id}/alerts", headers=headers)
                (alert,) = alerts.json()
                return alert["status"] == "pending" and len(alert["attempts"]) >= 2

            await eventually(retried)  # refused connections, each recorded as a retry
        # The service is down now, with the alert still undelivered.
        await hook.start()
        async with _service(settings) as client:
            await eventually(lambda: len(hook.received) >= 1)
            target.status = 200
            login = await log_in(client, "dana@example.com", "long enough pw")
            headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
            assert await _check(client, headers, monitor_id) == "up"
            await eventually(lambda: len(hook.received) >= 2)

            async def settled() -> bool:
                alerts = await client.get(f"/incidents/{incident_id}/alerts", headers=headers)
                return [a["status"] for a in alerts.json()] == ["sent", "sent"]

            await eventually(settled)
            alerts = (await client.get(f"/incidents/{incident_id}/alerts", headers=headers)).json()
        opened = alerts[0]
        assert [t["outcome"] for t in opened["attempts"]][-1] == "sent"
        assert all(t["outcome"] == "retry" for t in opened["attempts"][:-1])
        assert "refused" in opened["attempts"][0]["error"]
        assert [r.json()["event"] for r in hook.received] == [
            "incident.opened",
            "incident.resolved",
        ]
        for received in hook.received:
            assert_signed(received, SECRET_A)
    finally:
        await hook.stop()
        await _empty_tables(database_url)


@contextlib.asynccontextmanager
async def _service(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The app over a real lifespan, with a client; leaving it stops the service."""
    app = create_app(settings, Clock())
    async with lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as c:
            yield c
