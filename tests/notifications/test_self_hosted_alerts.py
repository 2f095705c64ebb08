"""The self-hosted channels end to end: a real outage and recovery reach a project's Matrix
room (a provider) and a member's ntfy topic (a personal channel) through the alert outbox and
the transports, on a service whose plans file offers every channel to the free plan."""

from __future__ import annotations

from email.header import decode_header, make_header
from typing import Any

import httpx
import pytest

from tests.app_settings import QUICK_ALERTS, overriding, plans
from tests.conftest import Cast, eventually
from tests.factories import Target, create_provider
from tests.receivers import Receiver
from upwatch.kit.clock import Clock

ROOM = "!OGEhHVWSdvArJzumhm:matrix.example.org"
MATRIX_TOKEN = "syt_Ym90_lDtdJrFNEbMIpQYnRqvK_2b4E9T"
ROOM_PATH = f"/_matrix/client/v3/rooms/{ROOM}/send/m.room.message/"

settings_overrides = overriding(
    QUICK_ALERTS,
    # How docs/operations.md tells an operator to offer every channel to everyone.
    plans_file=plans('[plans.free]\nnotificationChannels = "all"\n'),
    allow_private_targets=True,
)


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the sender runs on real time


async def _status_after_check(client: httpx.AsyncClient, cast: Cast, monitor_id: str) -> str:
    response = await client.post(f"/monitors/{monitor_id}/check", headers=cast.alice.headers)
    assert response.status_code == 200, response.text
    monitor = await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)
    return str(monitor.json()["status"])


async def test_an_outage_and_its_recovery_reach_a_matrix_room_and_a_members_ntfy_topic(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, target: Target
) -> None:
    matrix = {"homeserverUrl": receiver.url(""), "roomId": ROOM, "accessToken": MATRIX_TOKEN}
    await create_provider(
        client, cast.alice.headers, cast.project_id, type="matrix", name="Ops", config=matrix
    )
    settings = await client.put(
        "/users/settings",
        headers=cast.bob.headers,
        json={
            "notifications": {"ntfy": True},
            "ntfyConfig": {"serverUrl": receiver.url("/ntfy"), "topic": "bob-phone"},
        },
    )
    assert settings.status_code == 200, settings.text
    assert settings.json()["channelStatus"]["ntfy"] == {"active": True, "reason": None}
    created = await client.post(
        "/monitors",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "name": "Kasse", "type": "http", "url": target.url},
    )
    assert created.status_code == 201, created.text
    monitor_id = created.json()["id"]

    async def first_check_done() -> bool:
        got = await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)
        return bool(got.json()["status"] == "up")

    await eventually(first_check_done)
    target.status = 503
    assert await _status_after_check(client, cast, monitor_id) == "down"
    [incident] = (
        await client.get("/incidents", headers=cast.alice.headers, params={"monitorId": monitor_id})
    ).json()

    async def alerts() -> list[dict[str, Any]]:
        got = await client.get(f"/incidents/{incident['id']}/alerts", headers=cast.alice.headers)
        assert got.status_code == 200, got.text
        result: list[dict[str, Any]] = got.json()
        return result

    async def all_sent(count: int) -> bool:
        history = await alerts()
        return len(history) == count and all(a["status"] == "sent" for a in history)

    await eventually(lambda: all_sent(2))
    target.status = 200
    assert await _status_after_check(client, cast, monitor_id) == "up"
    await eventually(lambda: all_sent(4))

    topic = receiver.to("/ntfy/bob-phone")
    titles = [str(make_header(decode_header(r.headers["Title"]))) for r in topic]
    assert titles[0] == "DOWN: Kasse"
    assert titles[1].startswith("UP: Kasse is back after")
    assert [r.headers["Priority"] for r in topic] == ["4", "3"]  # a high incident, then calm
    room = [r for r in receiver.received if r.path.startswith(ROOM_PATH)]
    assert [r.method for r in room] == ["PUT", "PUT"]
    assert {r.headers["Authorization"] for r in room} == {f"Bearer {MATRIX_TOKEN}"}
    assert [r.json()["body"].splitlines()[0] for r in room] == titles
    # Each alert is its own Matrix transaction: the id in the path is the alert's delivery id.
    transactions = [r.path.removeprefix(ROOM_PATH) for r in room]
    assert transactions == [r.headers["X-Upwatch-Delivery"] for r in room]
    assert len(set(transactions)) == 2
