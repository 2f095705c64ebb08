"""Update bodies: the OpenAPI schema says which fields may be null, and the answers agree."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.app_settings import overriding
from tests.conftest import Cast, assert_problem
from tests.factories import sent_back

settings_overrides = overriding(allow_private_targets=True)


async def _schemas(client: httpx.AsyncClient) -> dict[str, Any]:
    document: dict[str, Any] = (await client.get("/openapi.json")).json()
    schemas: dict[str, Any] = document["components"]["schemas"]
    return schemas


def _nullable(prop: dict[str, Any]) -> bool:
    return prop.get("type") == "null" or {"type": "null"} in prop.get("anyOf", [])


async def _created(client: httpx.AsyncClient, cast: Cast, path: str, **body: Any) -> str:
    response = await client.post(
        path, headers=cast.alice.headers, json={"projectId": cast.project_id, **body}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _refusal(response: httpx.Response, field: str) -> str:
    problem = assert_problem(response, 422)
    assert problem["errors"][0]["field"] == field
    return str(problem["errors"][0]["message"])


@pytest.mark.parametrize(
    ("schema", "not_null", "nullable"),
    [
        (
            "IncidentPatch",
            {"title", "status", "severity", "description", "startedAt"},
            {"monitorId"},
        ),
        (
            "MonitorUpdate",
            {"name", "method", "headers", "intervalSeconds", "timeoutSeconds", "retries"},
            {"keyword", "url", "host", "port", "regionIds", "isActive"},
        ),
        ("ProviderUpdate", {"name", "isEnabled", "type", "projectId"}, {"quietHoursStart"}),
        ("ContactUpdate", {"contacted"}, {"admin_notes"}),
    ],
)
async def test_an_update_schema_offers_null_only_where_the_server_takes_it(
    client: httpx.AsyncClient, schema: str, not_null: set[str], nullable: set[str]
) -> None:
    properties = (await _schemas(client))[schema]["properties"]
    assert {name for name in not_null if _nullable(properties[name])} == set()
    assert {name for name in nullable if _nullable(properties[name])} == nullable
    assert all("default" not in properties[name] for name in not_null)


async def test_a_null_incident_title_is_refused_as_null(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _created(client, cast, "/incidents", title="Checkout errors")
    response = await client.patch(
        f"/incidents/{incident}", headers=cast.alice.headers, json={"title": None}
    )
    assert _refusal(response, "title") == "may not be null"


@pytest.mark.parametrize("field", ["method", "intervalSeconds", "name", "headers"])
async def test_a_null_for_a_field_no_monitor_goes_without_says_it_may_not_be_null(
    client: httpx.AsyncClient, cast: Cast, field: str
) -> None:
    monitor = await _created(
        client, cast, "/monitors", name="Resolver", type="dns", host="example.com"
    )
    response = await client.patch(
        f"/monitors/{monitor}", headers=cast.alice.headers, json={field: None}
    )
    assert _refusal(response, field) == "may not be null"


async def test_a_null_target_names_the_type_that_needs_it(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    monitor = await _created(
        client, cast, "/monitors", name="Port", type="tcp", host="example.com", port=443
    )
    response = await client.patch(
        f"/monitors/{monitor}", headers=cast.alice.headers, json={"port": None}
    )
    assert _refusal(response, "port") == "may not be null: a tcp monitor checks its port"


async def test_a_target_a_type_does_not_check_may_be_sent_back_null(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    monitor = await _created(
        client, cast, "/monitors", name="Port", type="tcp", host="example.com", port=443
    )
    read = (await client.get(f"/monitors/{monitor}", headers=cast.alice.headers)).json()
    sent = await sent_back(client, "MonitorUpdate", read)
    response = await client.patch(
        f"/monitors/{monitor}", headers=cast.alice.headers, json={**sent, "name": "Port 443"}
    )
    assert response.status_code == 200, response.text
    assert (response.json()["url"], response.json()["name"]) == (None, "Port 443")


async def test_a_provider_type_comes_with_its_config_as_the_schema_says(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    schema = (await _schemas(client))["ProviderUpdate"]
    assert schema["dependentRequired"] == {"type": ["config"]}
    provider = await _created(
        client,
        cast,
        "/notification-providers",
        name="Hook",
        type="webhook",
        config={"url": "https://hooks.example.com/x"},
    )
    response = await client.patch(
        f"/notification-providers/{provider}", headers=cast.alice.headers, json={"type": "webhook"}
    )
    assert "config" in _refusal(response, "config")


async def test_a_number_is_not_taken_for_a_date_time_in_a_body_or_a_query(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _created(client, cast, "/incidents", title="Checkout errors")
    for value in (1700000000, "1700000000", "0.5"):
        response = await client.patch(
            f"/incidents/{incident}", headers=cast.alice.headers, json={"startedAt": value}
        )
        assert "ISO 8601" in _refusal(response, "startedAt")
    monitor = await _created(
        client, cast, "/monitors", name="Resolver", type="dns", host="example.com"
    )
    response = await client.get(
        f"/monitors/{monitor}/checks", headers=cast.alice.headers, params={"to": "0.5"}
    )
    assert_problem(response, 422)
    listed = await client.get(
        f"/monitors/{monitor}/checks",
        headers=cast.alice.headers,
        params={"to": "2026-11-22T06:00:00Z"},
    )
    assert listed.status_code == 200, listed.text
