"""Secret HTTP monitor headers: masked in every response, still sent by the probe."""

from __future__ import annotations

from typing import Any

import httpx

from tests.app_settings import overriding, plans
from tests.conftest import Cast, assert_problem
from tests.factories import Target, post_in_project, sent_back

TOKEN = "Bearer s3cr3t-token-abcdef-9876"
API_KEY = "key-0123456789-wxyz"
SESSION = "session=feedface0123456789"


settings_overrides = overriding(
    allow_private_targets=True, plans_file=plans("[plans.free]\ncheckFrequencyMinutes = 0\n")
)


async def _monitor(client: httpx.AsyncClient, cast: Cast, url: str) -> dict[str, Any]:
    response = await post_in_project(
        client,
        cast.alice,
        cast.project_id,
        "/monitors",
        name="API",
        type="http",
        url=url,
        intervalSeconds=3600,
        headers={
            "Authorization": TOKEN,
            "cookie": SESSION,
            "X-Api-Key": API_KEY,
            "Accept": "application/json",
        },
        secretHeaders=["x-api-key"],
    )
    assert response.status_code == 201, response.text
    return response.json()


def _assert_masked(monitor: dict[str, Any]) -> None:
    assert monitor["headers"] == {
        "Authorization": "****9876",
        "cookie": "****6789",
        "X-Api-Key": "****wxyz",
        "Accept": "application/json",
    }


async def test_secret_header_values_are_masked_in_create_get_and_list_responses(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    created = await _monitor(client, cast, target.url)
    _assert_masked(created)
    assert created["secretHeaders"] == ["x-api-key"]
    fetched = await client.get(f"/monitors/{created['id']}", headers=cast.bob.headers)
    _assert_masked(fetched.json())
    listed = await client.get(
        "/monitors", headers=cast.bob.headers, params={"projectId": cast.project_id}
    )
    _assert_masked(listed.json()[0])
    assert all(secret not in listed.text for secret in (TOKEN, API_KEY, SESSION))


async def test_the_probe_still_sends_the_real_values(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(client, cast, target.url)
    checked = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert checked.json()["status"] == "up", checked.text
    assert target.headers["Authorization"] == TOKEN
    assert target.headers["Cookie"] == SESSION
    assert target.headers["X-Api-Key"] == API_KEY


async def test_an_update_that_sends_the_masks_back_keeps_the_stored_values(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(client, cast, target.url)
    echoed = {
        **await sent_back(client, "MonitorUpdate", monitor),
        "name": "API v2",
        "url": target.url.replace("/health", "/v2"),
    }
    updated = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.bob.headers, json=echoed
    )
    assert updated.status_code == 200, updated.text
    _assert_masked(updated.json())
    await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert target.headers["Authorization"] == TOKEN
    assert target.headers["X-Api-Key"] == API_KEY


async def test_a_new_value_replaces_a_secret_and_is_masked_too(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(client, cast, target.url)
    headers = {**monitor["headers"], "Authorization": "Bearer rotated-token-0000-1111"}
    updated = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.alice.headers, json={"headers": headers}
    )
    assert updated.json()["headers"]["Authorization"] == "****1111"
    await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert target.headers["Authorization"] == "Bearer rotated-token-0000-1111"
    assert target.headers["X-Api-Key"] == API_KEY


async def test_unmarking_a_header_does_not_reveal_its_stored_value(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(client, cast, target.url)
    updated = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.bob.headers, json={"secretHeaders": []}
    )
    assert updated.json()["headers"]["X-Api-Key"] == "****wxyz"
    assert updated.json()["secretHeaders"] == ["X-Api-Key"]


async def test_masked_secrets_are_not_carried_to_another_server(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(client, cast, target.url)
    elsewhere = "http://127.0.0.2:9/collect"
    echoed = await client.patch(
        f"/monitors/{monitor['id']}",
        headers=cast.bob.headers,
        json={"url": elsewhere, "headers": monitor["headers"]},
    )
    assert assert_problem(echoed, 422)["errors"][0]["field"] == "headers.Authorization"
    url_only = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.bob.headers, json={"url": elsewhere}
    )
    assert assert_problem(url_only, 422)["errors"][0]["field"] == "url"
    given_again = await client.patch(
        f"/monitors/{monitor['id']}",
        headers=cast.bob.headers,
        json={"url": elsewhere, "headers": {"Authorization": "Bearer for-the-new-server"}},
    )
    assert given_again.status_code == 200, given_again.text
    assert given_again.json()["headers"] == {"Authorization": "****rver"}


async def test_another_tenant_never_sees_the_monitor_or_its_headers(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(client, cast, target.url)
    assert_problem(
        await client.get(f"/monitors/{monitor['id']}", headers=cast.charlie.headers), 404
    )
    listed = await client.get("/monitors", headers=cast.charlie.headers)
    assert listed.json() == []
    assert all(secret not in listed.text for secret in (TOKEN, API_KEY))
    assert_problem(
        await client.patch(
            f"/monitors/{monitor['id']}",
            headers=cast.charlie.headers,
            json={"headers": monitor["headers"]},
        ),
        404,
    )
