"""Personal channels end to end: the notification switches and `*Config` objects of a
member's settings get their projects' incident alerts, through the alert outbox and the real
transports (a local HTTP receiver, an aiosmtpd mailbox), opt-in, within the owner's plan."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.app_settings import QUICK_ALERTS, overriding, plans
from tests.conftest import Account, Cast, Mailbox, eventually
from tests.factories import Target
from tests.receivers import Receiver
from upwatch.kit.clock import Clock
from upwatch.runtime import Runtime

SECRET = "personal-signing-secret-01"
# The owner's plan offers no Discord, so a personal Discord hook shows the plan applies.
PLANS = '[plans.free]\nnotificationChannels = ["email", "webhook", "slack", "teams"]\n'


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the sender runs on real time


settings_overrides = overriding(QUICK_ALERTS, plans_file=plans(PLANS), allow_private_targets=True)


async def _settings(client: httpx.AsyncClient, account: Account, **fields: Any) -> dict[str, Any]:
    response = await client.put("/users/settings", headers=account.headers, json=fields)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _bob_hooked(client: httpx.AsyncClient, cast: Cast, receiver: Receiver) -> None:
    """Bob, a member, turns his personal webhook on, pointed at the receiver's ``/bob``."""
    await _settings(
        client,
        cast.bob,
        notifications={"webhook": True},
        webhookConfig={"url": receiver.url("/bob")},
    )


async def _check(client: httpx.AsyncClient, headers: dict[str, str], monitor_id: str) -> str:
    response = await client.post(f"/monitors/{monitor_id}/check", headers=headers)
    assert response.status_code == 200, response.text
    monitor = await client.get(f"/monitors/{monitor_id}", headers=headers)
    return str(monitor.json()["status"])


Alerts = Callable[[], Awaitable[list[dict[str, Any]]]]


async def _outage_and_recovery(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> tuple[str, Alerts]:
    """A monitor of Alice's project goes down and comes back; returns the incident's id and
    a reader of its delivery history, each phase's alerts settled (none pending)."""
    headers = cast.alice.headers
    created = await client.post(
        "/monitors",
        headers=headers,
        json={"projectId": cast.project_id, "name": "Checkout", "type": "http", "url": target.url},
    )
    assert created.status_code == 201, created.text
    monitor_id = created.json()["id"]

    async def first_check_done() -> bool:
        got = await client.get(f"/monitors/{monitor_id}", headers=headers)
        return bool(got.json()["status"] == "up")

    await eventually(first_check_done)  # the scheduled first check; the next is minutes away
    target.status = 503
    assert await _check(client, headers, monitor_id) == "down"
    incidents = await client.get("/incidents", headers=headers, params={"monitorId": monitor_id})
    (incident,) = incidents.json()

    async def alerts() -> list[dict[str, Any]]:
        got = await client.get(f"/incidents/{incident['id']}/alerts", headers=headers)
        assert got.status_code == 200, got.text
        result: list[dict[str, Any]] = got.json()
        return result

    async def settled() -> bool:
        return all(a["status"] != "pending" for a in await alerts())

    await eventually(settled)
    target.status = 200
    assert await _check(client, headers, monitor_id) == "up"
    await eventually(settled)
    return str(incident["id"]), alerts


async def test_a_members_personal_webhook_and_mail_get_the_outage_and_its_recovery_once_each(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target, mailbox: Mailbox
) -> None:
    # Bob, a member: a signed webhook, and e-mail to his own address ({"to": []}).
    webhook = {"url": receiver.url("/bob"), "secret": SECRET}
    channels = {"webhook": True, "email": True}
    await _settings(
        client, cast.bob, notifications=channels, webhookConfig=webhook, emailConfig={"to": []}
    )
    # Charlie belongs to no project of Alice's: his channels never hear of it.
    await _settings(
        client,
        cast.charlie,
        notifications={"webhook": True},
        webhookConfig={"url": receiver.url("/charlie")},
        emailConfig={"to": []},
    )
    # Alice keeps the seed's default `notifications.email: true` and sets no emailConfig.
    mail_before = len(mailbox.messages)

    incident_id, alerts = await _outage_and_recovery(client, cast, target)

    bob = receiver.to("/bob")
    assert [r.json()["event"] for r in bob] == ["incident.opened", "incident.resolved"]
    for received in bob:
        expected = hmac.new(SECRET.encode(), received.body, hashlib.sha256).hexdigest()
        assert received.headers["X-Upwatch-Signature"] == f"sha256={expected}"
        assert received.json()["incident"]["id"] == incident_id
    assert bob[0].json()["monitor"]["name"] == "Checkout"
    assert receiver.to("/charlie") == []
    new_mail = mailbox.messages[mail_before:]
    assert [m["To"] for m in new_mail] == ["bob@example.com", "bob@example.com"]
    assert new_mail[0]["Subject"] == "DOWN: Checkout"
    assert new_mail[1]["Subject"].startswith("UP: Checkout is back after")
    assert mailbox.to(cast.alice.email) == []
    assert mailbox.to(cast.charlie.email) == []

    history = await alerts()
    assert len(history) == 4
    for alert in history:
        assert alert["providerId"] is None
        assert alert["userId"] == cast.bob.id
        assert alert["providerType"] == alert["channel"]
        assert alert["status"] == "sent"
        assert [t["outcome"] for t in alert["attempts"]] == ["sent"]
    assert sorted((a["channel"], a["event"]) for a in history) == [
        ("email", "incident.opened"),
        ("email", "incident.resolved"),
        ("webhook", "incident.opened"),
        ("webhook", "incident.resolved"),
    ]
    assert history[0]["providerName"] == "personal email: bob@example.com"


async def test_every_active_channel_is_used_the_preferred_one_first(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target, mailbox: Mailbox
) -> None:
    await _settings(
        client,
        cast.bob,
        notifications={"email": True, "slack": True, "webhook": True, "teams": False},
        preferredNotification="webhook",
        emailConfig={"to": ["bob.pager@example.com"]},
        slackConfig={"webhookUrl": receiver.url("/slack")},
        webhookConfig={"url": receiver.url("/hook")},
        teamsConfig={"webhookUrl": receiver.url("/teams")},  # switched off
    )
    _, alerts = await _outage_and_recovery(client, cast, target)

    history = await alerts()
    for event in ("incident.opened", "incident.resolved"):
        # Written (and so queued) in this order: the preferred channel, then the others.
        assert [a["channel"] for a in history if a["event"] == event] == [
            "webhook",
            "email",
            "slack",
        ]
    assert all(a["status"] == "sent" for a in history)
    assert len(receiver.to("/hook")) == len(receiver.to("/slack")) == 2
    assert receiver.to("/teams") == []
    assert len(mailbox.to("bob.pager@example.com")) == 2


async def test_a_personal_channel_outside_the_owners_plan_is_not_used(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target
) -> None:
    # Bob's own plan offers Discord; the project is Alice's, and hers does not.
    upgraded = await client.post("/subscriptions/upgrade", headers=cast.bob.headers, json={})
    assert upgraded.status_code == 200, upgraded.text
    await _settings(
        client,
        cast.bob,
        notifications={"discord": True, "webhook": True},
        discordConfig={"webhookUrl": receiver.url("/discord")},
        webhookConfig={"url": receiver.url("/hook")},
    )
    _, alerts = await _outage_and_recovery(client, cast, target)

    assert receiver.to("/discord") == []
    assert len(receiver.to("/hook")) == 2
    discord = [a for a in await alerts() if a["channel"] == "discord"]
    assert [(a["status"], a["reason"]) for a in discord] == [
        ("suppressed", "discord is not in the owner's plan"),
        ("suppressed", "discord is not in the owner's plan"),
    ]


async def test_an_invalid_stored_config_is_kept_reported_inactive_and_sends_nothing(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target, runtime: Runtime
) -> None:
    # Stored before configs were checked: Slack without its webhookUrl.
    from upwatch.accounts.repository import UserRepository

    async with runtime.db.sessionmaker() as session:
        bob = await UserRepository(session).get(cast.bob.id)
        assert bob is not None
        bob.settings = {
            "notifications": {"slack": True, "webhook": True},
            "slackConfig": {"channel": "#ops", "url": receiver.url("/slack")},
            "webhookConfig": {"url": receiver.url("/hook")},
        }
        await session.commit()

    got = await client.get("/users/settings", headers=cast.bob.headers)
    assert got.status_code == 200
    settings = got.json()
    assert settings["slackConfig"]["channel"] == "#ops"  # kept
    slack = settings["channelStatus"]["slack"]
    assert slack["active"] is False
    assert slack["reason"].startswith("slackConfig.webhookUrl: ")
    assert settings["channelStatus"]["webhook"] == {"active": True, "reason": None}

    _, alerts = await _outage_and_recovery(client, cast, target)
    assert receiver.to("/slack") == []
    assert len(receiver.to("/hook")) == 2
    assert {a["channel"] for a in await alerts()} == {"webhook"}


class TestPendingPersonalAlerts:
    # Retries a second apart: room to change the settings while an alert waits.
    settings_overrides = overriding(
        QUICK_ALERTS,
        allow_private_targets=True,
        alert_retry_seconds=1.0,
        alert_retry_max_seconds=1.0,
    )

    async def test_a_channel_turned_off_or_a_member_gone_stops_pending_personal_alerts(
        self, client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target
    ) -> None:
        await _bob_hooked(client, cast, receiver)
        receiver.status = 503  # the outage alert waits for a retry
        headers = cast.alice.headers
        created = await client.post(
            "/monitors",
            headers=headers,
            json={"projectId": cast.project_id, "name": "API", "type": "http", "url": target.url},
        )
        monitor_id = created.json()["id"]
        target.status = 500
        assert await _check(client, headers, monitor_id) == "down"
        (incident,) = (await client.get("/incidents", headers=headers)).json()
        url = f"/incidents/{incident['id']}/alerts"

        async def last(count: int, outcome: str) -> bool:
            history = (await client.get(url, headers=headers)).json()
            return len(history) == count and history[-1]["status"] == outcome

        async def retried() -> bool:
            history = (await client.get(url, headers=headers)).json()
            return len(history) == 1 and len(history[0]["attempts"]) >= 1

        await eventually(retried)
        await _settings(client, cast.bob, notifications={"webhook": False})
        receiver.status = 200  # a retry would now be delivered, if one were made
        await eventually(lambda: last(1, "failed"))
        (alert,) = (await client.get(url, headers=headers)).json()
        assert alert["reason"] == "the personal channel is inactive: notifications.webhook is off"

        # On again; the recovery alert waits for a retry, and Bob leaves the project meanwhile.
        await _settings(client, cast.bob, notifications={"webhook": True})
        receiver.status = 503
        target.status = 200
        assert await _check(client, headers, monitor_id) == "up"

        async def recovery_queued() -> bool:
            return len((await client.get(url, headers=headers)).json()) == 2

        # The check answers before the ingester resolves the incident and queues the recovery
        # alert: Bob leaves only once it is queued, or there is no alert of his to stop.
        await eventually(recovery_queued)
        left = await client.delete(
            f"/projects/{cast.project_id}/users/{cast.bob.id}", headers=cast.bob.headers
        )
        assert left.status_code == 200, left.text
        receiver.status = 200
        answered = len(receiver.received)
        await eventually(lambda: last(2, "failed"))
        history = (await client.get(url, headers=headers)).json()
        assert history[1]["reason"] == "the user is no longer a member of the project"
        assert receiver.received[answered:] == []


async def test_deleting_the_account_removes_its_personal_alerts(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target
) -> None:
    await _bob_hooked(client, cast, receiver)
    _, alerts = await _outage_and_recovery(client, cast, target)
    assert len(await alerts()) == 2
    deleted = await client.delete("/users/me", headers=cast.bob.headers)
    assert deleted.status_code == 200, deleted.text
    assert await alerts() == []
