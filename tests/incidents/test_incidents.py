"""Incidents through the HTTP API: creation defaults, timeline, resolvedAt, access, errors."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Account, Cast, assert_problem
from tests.factories import create_incident, create_monitor

_incident = create_incident


async def _paused_monitor(client: httpx.AsyncClient, account: Account, project_id: str) -> str:
    monitor = await create_monitor(
        client,
        account,
        project_id,
        url="https://shop.example/health",
        intervalSeconds=300,  # the free plan's shortest
        isActive=False,  # never checked: no automatic incident gets in the way
    )
    return str(monitor["id"])


async def test_creating_an_incident_answers_201_with_its_defaults_and_first_timeline_entry(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    body = await _incident(client, cast.alice, cast.project_id)
    assert body["status"] == "investigating"
    assert body["severity"] == "medium"
    assert body["projectId"] == cast.project_id
    assert body["monitorId"] is None
    assert body["description"] == ""
    assert body["resolvedAt"] is None
    assert body["startedAt"].endswith("Z")
    assert body["automatic"] is False
    assert [u["status"] for u in body["updates"]] == ["investigating"]
    for field in ("id", "createdAt", "updatedAt"):
        assert body[field]


async def test_an_incident_keeps_the_fields_it_was_created_with(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    monitor_id = await _paused_monitor(client, cast.alice, cast.project_id)
    body = await _incident(
        client,
        cast.bob,
        cast.project_id,
        status="identified",
        severity="critical",
        description="Payments time out",
        monitorId=monitor_id,
        startedAt="2026-11-20T10:00:00+01:00",
    )
    assert (body["status"], body["severity"]) == ("identified", "critical")
    assert body["monitorId"] == monitor_id
    assert body["startedAt"] == "2026-11-20T09:00:00Z"
    assert body["updates"][0]["message"] == "Payments time out"


async def test_an_incident_created_resolved_has_a_resolved_time(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    body = await _incident(client, cast.alice, cast.project_id, status="resolved")
    assert body["resolvedAt"] is not None


async def test_status_changes_append_to_the_timeline_and_resolving_sets_then_clears_resolved_at(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _incident(client, cast.alice, cast.project_id)
    url = f"/incidents/{incident['id']}"
    posted = await client.post(
        f"{url}/updates",
        headers=cast.bob.headers,
        json={"status": "identified", "message": "A bad deploy"},
    )
    assert posted.status_code == 201, posted.text
    assert posted.json()["updates"][-1]["message"] == "A bad deploy"

    resolved = await client.patch(url, headers=cast.alice.headers, json={"status": "resolved"})
    assert resolved.status_code == 200, resolved.text
    assert resolved.json()["resolvedAt"] is not None

    reopened = await client.post(
        f"{url}/updates",
        headers=cast.alice.headers,
        json={"status": "monitoring", "message": "Watching again"},
    )
    body = reopened.json()
    assert body["resolvedAt"] is None
    assert [u["status"] for u in body["updates"]] == [
        "investigating",
        "identified",
        "resolved",
        "monitoring",
    ]


async def test_an_update_without_a_status_keeps_the_status_and_adds_the_message(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _incident(client, cast.alice, cast.project_id, status="identified")
    posted = await client.post(
        f"/incidents/{incident['id']}/updates",
        headers=cast.alice.headers,
        json={"message": "Still on it"},
    )
    assert posted.status_code == 201
    assert posted.json()["status"] == "identified"
    assert posted.json()["updates"][-1] == {
        **posted.json()["updates"][-1],
        "message": "Still on it",
    }


async def test_patching_other_fields_changes_them_without_a_timeline_entry(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _incident(client, cast.alice, cast.project_id)
    patched = await client.patch(
        f"/incidents/{incident['id']}",
        headers=cast.alice.headers,
        json={"title": "Checkout down", "severity": "high", "description": "All regions"},
    )
    assert patched.status_code == 200
    body = patched.json()
    assert (body["title"], body["severity"], body["description"]) == (
        "Checkout down",
        "high",
        "All regions",
    )
    assert len(body["updates"]) == 1


async def test_incidents_are_listed_newest_first_and_filtered_by_project_and_status(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    first = await _incident(client, cast.alice, cast.project_id, title="First")
    second = await _incident(client, cast.alice, cast.project_id, title="Second", status="resolved")
    listed = await client.get("/incidents", headers=cast.bob.headers)
    assert listed.status_code == 200
    assert [i["id"] for i in listed.json()] == [second["id"], first["id"]]
    assert listed.headers["X-Total-Count"] == "2"
    resolved = await client.get(
        "/incidents",
        headers=cast.bob.headers,
        params={"projectId": cast.project_id, "status": "resolved"},
    )
    assert [i["id"] for i in resolved.json()] == [second["id"]]
    bad = await client.get("/incidents", headers=cast.bob.headers, params={"status": "gone"})
    assert_problem(bad, 422)


async def test_deleting_an_incident_answers_200_and_it_is_gone(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _incident(client, cast.alice, cast.project_id)
    deleted = await client.delete(f"/incidents/{incident['id']}", headers=cast.bob.headers)
    assert deleted.status_code == 200
    assert deleted.json() == {"id": incident["id"], "deleted": True}
    gone = await client.get(f"/incidents/{incident['id']}", headers=cast.alice.headers)
    assert_problem(gone, 404)


async def test_charlie_sees_and_touches_none_of_alices_incidents(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _incident(client, cast.alice, cast.project_id)
    url = f"/incidents/{incident['id']}"
    headers = cast.charlie.headers
    assert_problem(await client.get(url, headers=headers), 404)
    assert_problem(await client.patch(url, headers=headers, json={"title": "x"}), 404)
    assert_problem(await client.delete(url, headers=headers), 404)
    assert_problem(
        await client.post(f"{url}/updates", headers=headers, json={"message": "hi"}), 404
    )
    assert_problem(await client.get(f"{url}/alerts", headers=headers), 404)
    listed = await client.get("/incidents", headers=headers)
    assert listed.json() == []
    created = await client.post(
        "/incidents", headers=headers, json={"title": "Mine", "projectId": cast.project_id}
    )
    assert_problem(created, 404)


async def test_a_monitor_of_another_project_cannot_be_linked(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    own = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    foreign = await _paused_monitor(client, cast.charlie, own.json()["id"])
    created = await client.post(
        "/incidents",
        headers=cast.alice.headers,
        json={"title": "x", "projectId": cast.project_id, "monitorId": foreign},
    )
    assert assert_problem(created, 422)["errors"][0]["field"] == "monitorId"
    incident = await _incident(client, cast.alice, cast.project_id)
    patched = await client.patch(
        f"/incidents/{incident['id']}", headers=cast.alice.headers, json={"monitorId": foreign}
    )
    assert_problem(patched, 422)


@pytest.mark.parametrize(
    "fields",
    [
        {"title": ""},
        {"title": "x" * 201},
        {"status": "closed"},
        {"severity": "urgent"},
        {"startedAt": "2026-11-20T10:00:00"},  # no offset
        {"startedAt": "yesterday"},
        {"projectId": None},
    ],
)
async def test_invalid_incident_fields_are_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, fields: dict[str, Any]
) -> None:
    body = {"title": "Checkout", "projectId": cast.project_id, **fields}
    response = await client.post("/incidents", headers=cast.alice.headers, json=body)
    assert_problem(response, 422)


async def test_null_for_a_required_field_in_a_patch_is_refused(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    incident = await _incident(client, cast.alice, cast.project_id)
    for field in ("title", "status", "severity", "startedAt"):
        response = await client.patch(
            f"/incidents/{incident['id']}", headers=cast.alice.headers, json={field: None}
        )
        assert_problem(response, 422)


async def test_incidents_need_a_token(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/incidents"), 401)
    assert_problem(await client.post("/incidents", json={"title": "x", "projectId": "p"}), 401)
