"""Alert conditions end to end: a real target that turns slow opens a low-severity incident and
alerts a real webhook receiver; the same incident is escalated when the target then fails, and
the monitor needs its successThreshold of passing checks to be up again."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.app_settings import QUICK_ALERTS, overriding
from tests.conftest import Cast, eventually
from tests.factories import Target, create_provider
from tests.receivers import Receiver
from upwatch.kit.clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the engine and the alert sender run on real time


settings_overrides = overriding(QUICK_ALERTS, allow_private_targets=True)


async def _check(client: httpx.AsyncClient, headers: dict[str, str], monitor_id: str) -> str:
    """Check now; the monitor's status once the result is stored."""
    response = await client.post(f"/monitors/{monitor_id}/check", headers=headers)
    assert response.status_code == 200, response.text
    monitor = await client.get(f"/monitors/{monitor_id}", headers=headers)
    return str(monitor.json()["status"])


async def _incidents(
    client: httpx.AsyncClient, headers: dict[str, str], monitor_id: str
) -> list[dict[str, Any]]:
    found = await client.get("/incidents", headers=headers, params={"monitorId": monitor_id})
    incidents: list[dict[str, Any]] = found.json()
    return incidents


async def test_a_target_that_turns_slow_opens_a_low_incident_escalated_when_it_fails(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target
) -> None:
    headers = cast.alice.headers
    await create_provider(
        client,
        headers,
        cast.project_id,
        type="webhook",
        name="Ops hook",
        config={"url": receiver.url("/hook")},
    )
    created = await client.post(
        "/monitors",
        headers=headers,
        json={
            "projectId": cast.project_id,
            "name": "Checkout",
            "type": "http",
            "url": target.url,
            "intervalSeconds": 3600,
            "degradedThresholdMs": 300,
            "alertOnDegraded": 2,
            "successThreshold": 3,
        },
    )
    assert created.status_code == 201, created.text
    monitor = created.json()
    assert (monitor["alertOnDegraded"], monitor["successThreshold"]) == (2, 3)
    monitor_id = monitor["id"]

    async def first_check_done() -> bool:
        got = await client.get(f"/monitors/{monitor_id}", headers=headers)
        return bool(got.json()["status"] == "up")

    await eventually(first_check_done)  # the scheduled first check; the next is an hour away

    target.delay = 0.8
    assert await _check(client, headers, monitor_id) == "degraded"
    assert await _incidents(client, headers, monitor_id) == []  # one degraded check: no alert
    assert await _check(client, headers, monitor_id) == "degraded"
    [incident] = await _incidents(client, headers, monitor_id)
    assert (incident["severity"], incident["status"], incident["title"]) == (
        "low",
        "investigating",
        "Checkout is degraded",
    )
    await eventually(lambda: len(receiver.to("/hook")) >= 1)
    [opened] = receiver.to("/hook")
    payload = opened.json()
    assert payload["event"] == "incident.opened"
    assert payload["summary"] == "DEGRADED: Checkout"
    assert payload["incident"]["severity"] == "low"
    assert payload["failure"]["kind"] == "degraded"
    assert "above the degraded threshold of 300 ms" in payload["failure"]["message"]

    # Down while the degraded incident is open: that incident becomes the outage's.
    target.delay = 0.0
    target.status = 503
    assert await _check(client, headers, monitor_id) == "down"
    [escalated] = await _incidents(client, headers, monitor_id)
    assert escalated["id"] == incident["id"]
    assert (escalated["severity"], escalated["title"]) == ("high", "Checkout is down")
    await eventually(lambda: len(receiver.to("/hook")) >= 2)
    second = receiver.to("/hook")[1].json()
    assert (second["summary"], second["incident"]["severity"]) == ("DOWN: Checkout", "high")

    # successThreshold 3: two passing checks are not enough.
    target.status = 200
    assert await _check(client, headers, monitor_id) == "down"
    assert await _check(client, headers, monitor_id) == "down"
    assert await _check(client, headers, monitor_id) == "up"
    [resolved] = await _incidents(client, headers, monitor_id)
    assert resolved["status"] == "resolved"
    await eventually(lambda: len(receiver.to("/hook")) >= 3)
    assert receiver.to("/hook")[2].json()["event"] == "incident.resolved"
    assert len(receiver.to("/hook")) == 3
