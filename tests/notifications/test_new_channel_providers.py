"""Rocket.Chat, Google Chat, Opsgenie and Apprise providers through the HTTP API: pro plan,
secrets masked and kept, internal addresses refused; the two chats as personal channels."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Account, Cast, assert_problem
from tests.factories import create_provider

ROCKET_TOKEN = "Xk9vQ2rT7wLmN4pZs8YhBc1D"
GOOGLE_TOKEN = "Zx8Qw1Ab2Cd3Ef4Gh5Ij6Kl7"
API_KEY = "eb243592-faa2-4ba2-a551-1afdf565c889"
APPRISE_TOKEN = "JHMHI8qBe7bk2ZwO5U711o3dV"
CONFIGS: dict[str, dict[str, Any]] = {
    "rocketchat": {"webhookUrl": f"https://chat.example.com/hooks/6a1b2c/{ROCKET_TOKEN}"},
    "googlechat": {
        "webhookUrl": "https://chat.googleapis.com/v1/spaces/AAAA/messages"
        f"?key=AIzaSyDdI0hCZtE6&token={GOOGLE_TOKEN}"
    },
    "opsgenie": {"apiKey": API_KEY, "region": "eu"},
    "apprise": {
        "urls": [f"discord://4174216298/{APPRISE_TOKEN}", "ntfys://ntfy.sh/upwatch-alerts"]
    },
}
SHOWN: dict[str, dict[str, Any]] = {
    "rocketchat": {"webhookUrl": "https://chat.example.com/****"},
    "googlechat": {"webhookUrl": "https://chat.googleapis.com/****"},
    "opsgenie": {"apiKey": f"****{API_KEY[-4:]}", "region": "eu"},
    "apprise": {"urls": ["discord://****", "ntfys://****"]},
}
KINDS = sorted(CONFIGS)


async def _upgrade(client: httpx.AsyncClient, account: Account) -> None:
    response = await client.post("/subscriptions/upgrade", headers=account.headers, json={})
    assert response.status_code == 200, response.text


async def _create(
    client: httpx.AsyncClient, cast: Cast, kind: str, config: dict[str, Any]
) -> httpx.Response:
    body = {"projectId": cast.project_id, "type": kind, "name": f"{kind} alerts", "config": config}
    return await client.post("/notification-providers", headers=cast.alice.headers, json=body)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_new_channel_is_masked_everywhere_and_a_masked_config_sent_back_keeps_it(
    client: httpx.AsyncClient, cast: Cast, runtime: Any, kind: str
) -> None:
    from upwatch.models import NotificationProvider

    await _upgrade(client, cast.alice)
    body = await create_provider(
        client, cast.bob.headers, cast.project_id, type=kind, name="On call", config=CONFIGS[kind]
    )
    url = f"/notification-providers/{body['id']}"
    listed = await client.get("/notification-providers/user", headers=cast.alice.headers)
    read = await client.get(url, headers=cast.alice.headers)
    for shown in (body["config"], read.json()["config"], listed.json()[0]["config"]):
        assert shown == SHOWN[kind]

    patched = await client.patch(url, headers=cast.alice.headers, json={"config": SHOWN[kind]})

    assert patched.status_code == 200, patched.text
    assert patched.json()["config"] == SHOWN[kind]
    async with runtime.db.sessionmaker() as session:
        stored = await session.get(NotificationProvider, body["id"])
        assert stored is not None
        assert stored.config == CONFIGS[kind]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_new_channels_are_pro_channels(
    client: httpx.AsyncClient, cast: Cast, kind: str
) -> None:
    assert_problem(await _create(client, cast, kind, CONFIGS[kind]), 402)


@pytest.mark.parametrize(
    ("kind", "config", "field"),
    [
        ("rocketchat", {"webhookUrl": "http://10.0.0.5/hooks/a/b"}, "config.webhookUrl"),
        ("googlechat", {"webhookUrl": "http://169.254.169.254/v1/spaces"}, "config.webhookUrl"),
        ("apprise", {"urls": ["ntfys://ntfy.sh/a", "json://192.168.1.1/x"]}, "config.urls.1"),
    ],
)
async def test_urls_at_internal_addresses_are_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, kind: str, config: dict[str, Any], field: str
) -> None:
    await _upgrade(client, cast.alice)

    problem = assert_problem(await _create(client, cast, kind, config), 422)

    assert "refused" in problem["detail"]
    assert [error["field"] for error in problem["errors"]] == [field]


@pytest.mark.parametrize(
    ("kind", "config", "field"),
    [
        ("opsgenie", {"apiKey": API_KEY, "region": "apac"}, "config.region"),
        ("opsgenie", {"apiKey": "short"}, "config.apiKey"),
        ("apprise", {"urls": []}, "config.urls"),
        ("apprise", {"urls": ["mailto://me:hunter2@mail.example.com"]}, "config.urls.0"),
    ],
)
async def test_configs_the_channel_cannot_use_are_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, kind: str, config: dict[str, Any], field: str
) -> None:
    await _upgrade(client, cast.alice)

    problem = assert_problem(await _create(client, cast, kind, config), 422)

    assert [error["field"] for error in problem["errors"]] == [field]
    assert "hunter2" not in str(problem)


@pytest.mark.parametrize("kind", ["rocketchat", "googlechat"])
async def test_a_member_sets_the_chat_as_a_personal_channel_and_sees_it_masked(
    client: httpx.AsyncClient, cast: Cast, kind: str
) -> None:
    await _upgrade(client, cast.alice)
    response = await client.put(
        "/users/settings",
        headers=cast.bob.headers,
        json={"notifications": {kind: True}, f"{kind}Config": CONFIGS[kind]},
    )

    assert response.status_code == 200, response.text
    settings = response.json()
    assert settings[f"{kind}Config"] == SHOWN[kind]
    assert settings["channelStatus"][kind] == {"active": True, "reason": None}
    refused = await client.put(
        "/users/settings",
        headers=cast.bob.headers,
        json={f"{kind}Config": {"webhookUrl": "http://10.0.0.5/hook"}},
    )
    assert_problem(refused, 422)
