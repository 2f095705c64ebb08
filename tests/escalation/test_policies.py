"""Escalation policies, reminders and acknowledgement over HTTP: the cast's walls, every
error, and an acknowledgement that members see but a public status page never shows."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import (
    add_component,
    create_provider,
    ingest,
    post_in_project,
)
from upwatch.kit.clock import ManualClock

settings_overrides = overriding(allow_private_targets=True)


async def provider(client: httpx.AsyncClient, cast: Cast, name: str = "ops", **fields: Any) -> str:
    made = await create_provider(
        client,
        cast.alice.headers,
        cast.project_id,
        type="webhook",
        name=name,
        config={"url": "http://127.0.0.1:9/hook"},
        **fields,
    )
    return str(made["id"])


async def policy(
    client: httpx.AsyncClient, cast: Cast, provider_ids: list[str], **fields: Any
) -> httpx.Response:
    body = {"name": "On call", "steps": [{"providerIds": provider_ids, "delayMinutes": 0}]}
    return await post_in_project(
        client, cast.alice, cast.project_id, "/escalation-policies", **{**body, **fields}
    )


async def test_a_member_writes_a_policy_step_by_step_and_a_monitor_names_it(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    first, second = await provider(client, cast, "first"), await provider(client, cast, "second")
    made = await policy(
        client,
        cast,
        [first],
        steps=[
            {"providerIds": [first], "delayMinutes": 0},
            {"providerIds": [first, second], "delayMinutes": 15},
        ],
    )
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["steps"][1] == {"providerIds": [first, second], "delayMinutes": 15}
    path = f"/escalation-policies/{body['id']}"
    assert (await client.get(path, headers=cast.bob.headers)).json() == body
    listed = await client.get(
        "/escalation-policies", headers=cast.bob.headers, params={"projectId": cast.project_id}
    )
    assert [p["id"] for p in listed.json()] == [body["id"]]
    assert listed.headers["X-Total-Count"] == "1"
    renamed = await client.patch(path, headers=cast.bob.headers, json={"name": "Weekend"})
    assert renamed.status_code == 200, renamed.text
    assert (renamed.json()["name"], renamed.json()["steps"]) == ("Weekend", body["steps"])

    monitor = await as_alice.monitor(
        url="http://127.0.0.1:9/", intervalSeconds=300, escalationPolicyId=body["id"]
    )
    assert monitor["escalationPolicyId"] == body["id"]
    cleared = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.alice.headers, json={"escalationPolicyId": None}
    )
    assert cleared.json()["escalationPolicyId"] is None
    named = await client.patch(
        f"/monitors/{monitor['id']}",
        headers=cast.alice.headers,
        json={"escalationPolicyId": body["id"]},
    )
    assert named.json()["escalationPolicyId"] == body["id"]
    # Deleting the policy leaves the monitor paging everyone.
    assert (await client.delete(path, headers=cast.alice.headers)).status_code == 200
    assert_problem(await client.get(path, headers=cast.alice.headers), 404)
    after = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert after.json()["escalationPolicyId"] is None


async def test_charlie_sees_and_touches_no_policy_of_another_project(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    made = await policy(client, cast, [await provider(client, cast)])
    path = f"/escalation-policies/{made.json()['id']}"
    charlie = cast.charlie.headers
    assert_problem(await client.get(path, headers=charlie), 404)
    assert_problem(await client.patch(path, headers=charlie, json={"name": "Mine"}), 404)
    assert_problem(await client.delete(path, headers=charlie), 404)
    assert (await client.get("/escalation-policies", headers=charlie)).json() == []
    other = await client.post("/projects", headers=charlie, json={"name": "Charlie's"})
    stolen = await post_in_project(
        client,
        cast.charlie,
        cast.project_id,
        "/escalation-policies",
        name="x",
        steps=[{"providerIds": ["a"], "delayMinutes": 0}],
    )
    assert_problem(stolen, 404)
    # A monitor of Charlie's project cannot name Alice's policy.
    refused = await post_in_project(
        client,
        cast.charlie,
        other.json()["id"],
        "/monitors",
        name="Mine",
        type="http",
        url="http://127.0.0.1:9/",
        intervalSeconds=300,
        escalationPolicyId=made.json()["id"],
    )
    assert "escalationPolicyId" in assert_problem(refused, 422)["detail"]


async def test_without_a_token_every_policy_route_answers_401(client: httpx.AsyncClient) -> None:
    for method, path in (
        ("POST", "/escalation-policies"),
        ("GET", "/escalation-policies"),
        ("GET", "/escalation-policies/x"),
        ("PATCH", "/escalation-policies/x"),
        ("DELETE", "/escalation-policies/x"),
        ("POST", "/incidents/x/acknowledge"),
    ):
        assert_problem(await client.request(method, path, json={}), 401)


async def test_a_policy_that_cannot_work_is_refused_naming_the_field(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    mine = await provider(client, cast)
    other = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    elsewhere = await create_provider(
        client,
        cast.charlie.headers,
        other.json()["id"],
        type="webhook",
        name="elsewhere",
        config={"url": "http://127.0.0.1:9/hook"},
    )
    for fields, field in (
        ({"steps": []}, "steps"),
        ({"steps": [{"providerIds": [], "delayMinutes": 0}]}, "providerIds"),
        ({"steps": [{"providerIds": [mine], "delayMinutes": -1}]}, "delayMinutes"),
        ({"steps": [{"providerIds": [mine], "delayMinutes": 1441}]}, "delayMinutes"),
        ({"steps": [{"providerIds": [elsewhere["id"]], "delayMinutes": 0}]}, "steps.0"),
        ({"steps": [{"providerIds": [mine], "delayMinutes": 0}] * 11}, "steps"),
        # PostgreSQL refuses a NUL in any text: a list item is checked like a field.
        ({"steps": [{"providerIds": ["a\u0000"], "delayMinutes": 0}]}, "providerIds"),
        ({"name": ""}, "name"),
    ):
        problem = assert_problem(await policy(client, cast, [mine], **fields), 422)
        assert field in problem["detail"], (fields, problem)
    made = await policy(client, cast, [mine])
    path = f"/escalation-policies/{made.json()['id']}"
    for body, field in (
        ({"name": None}, "name"),
        ({"steps": [{"providerIds": ["nope"], "delayMinutes": 5}]}, "steps.0"),
    ):
        problem = assert_problem(await client.patch(path, headers=cast.bob.headers, json=body), 422)
        assert field in problem["detail"], (body, problem)
    for minutes in (0, 4, 1441):
        refused = await as_alice.post(
            "/notification-providers",
            type="webhook",
            name="x",
            config={"url": "http://127.0.0.1:9/hook"},
            repeatEveryMinutes=minutes,
        )
        assert "repeatEveryMinutes" in assert_problem(refused, 422)["detail"]


async def test_an_acknowledgement_is_for_members_and_never_reaches_the_status_page(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300, retries=0)
    page = await as_alice.page(isPublic=True)
    await add_component(client, cast.alice, page["id"], monitor["id"], name="Checkout")
    await ingest(app.state.engine, monitor["id"], clock.now(), ok=False)
    incidents = await client.get("/incidents", headers=cast.alice.headers)
    incident = incidents.json()[0]
    path = f"/incidents/{incident['id']}/acknowledge"
    assert_problem(await client.post(path, headers=cast.charlie.headers), 404)
    assert_problem(await client.post("/incidents/nope/acknowledge", headers=cast.bob.headers), 404)
    taken = await client.post(path, headers=cast.bob.headers)
    assert taken.status_code == 200, taken.text
    assert taken.json()["acknowledgedBy"] == cast.bob.id
    assert (
        "already acknowledged"
        in assert_problem(await client.post(path, headers=cast.alice.headers), 409)["detail"]
    )
    public = await client.get("/status-pages/public/slug/shop-status")
    assert public.status_code == 200, public.text
    shown = public.json()["incidents"][0]["updates"]
    assert shown, public.json()
    assert not any("bob@example.com" in u["message"] for u in shown)
    # A manual incident that is resolved has nothing to acknowledge.
    done = await as_alice.incident(status="resolved")
    refused = await client.post(f"/incidents/{done['id']}/acknowledge", headers=cast.bob.headers)
    assert "resolved" in assert_problem(refused, 409)["detail"]
