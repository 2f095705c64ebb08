"""Assertions on an HTTP monitor through the API: kept as given, checked against a real
target by "check now", changed as a whole, and refused naming the field."""

from __future__ import annotations

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import Target

settings_overrides = overriding(allow_private_targets=True)


async def test_a_monitor_checks_its_assertions_and_names_the_one_that_failed(
    client: httpx.AsyncClient, cast: Cast, target: Target, as_alice: InProject
) -> None:
    target.body = '{"status": "ok", "queue": 12}'
    rules = [
        {"source": "json", "path": "$.status", "operator": "equals", "value": "ok"},
        {"source": "json", "path": "$.queue", "operator": "lessThan", "value": 100},
        {"source": "json", "path": "$.error", "operator": "notExists"},
    ]
    monitor = await as_alice.monitor(url=target.url, intervalSeconds=300, assertions=rules)
    assert monitor["assertions"] == rules
    path = f"/monitors/{monitor['id']}"
    up = await client.post(f"{path}/check", headers=cast.bob.headers)
    assert up.json()["status"] == "up", up.text

    target.body = '{"status": "ok", "queue": 250}'
    down = await client.post(f"{path}/check", headers=cast.bob.headers)
    assert down.json()["status"] == "down"
    assert down.json()["error"] == "assertion 2 (json $.queue lessThan 100) failed: got 250"

    kept = await client.patch(path, headers=cast.alice.headers, json={"name": "Shop API"})
    assert kept.json()["assertions"] == rules  # left out: unchanged
    emptied = await client.patch(path, headers=cast.alice.headers, json={"assertions": []})
    assert emptied.json()["assertions"] == []
    again = await client.post(f"{path}/check", headers=cast.bob.headers)
    assert again.json()["status"] == "up"


async def test_an_assertion_that_cannot_work_is_refused_naming_the_field(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    base = {"projectId": cast.project_id, "name": "Shop", "intervalSeconds": 300}
    for extra, field in (
        ({"type": "http", "url": target.url, "assertions": [{"source": "json", "operator": "exists"}]}, "assertions.0.path"),  # noqa: E501
        ({"type": "http", "url": target.url, "assertions": [{"source": "body", "operator": "matches", "value": "("}]}, "assertions.0.value"),  # noqa: E501
        ({"type": "http", "url": target.url, "assertions": [{"source": "xml", "operator": "exists"}]}, "source"),  # noqa: E501
        ({"type": "heartbeat", "assertions": [{"source": "statusCode", "operator": "equals", "value": 200}]}, "assertions"),  # noqa: E501
    ):  # fmt: skip
        refused = await client.post("/monitors", headers=cast.alice.headers, json={**base, **extra})
        assert field in assert_problem(refused, 422)["detail"], (extra, refused.text)


async def test_a_list_of_costly_patterns_and_exploding_paths_is_refused_before_it_holds_the_api(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    """The review's: 20 patterns of (?:a{316}){316} took 2.6 s to validate (80 ms each to
    compile); $..*..*..* was saved in 55 ms and then held the probe worker for 22 s."""
    base = {"projectId": cast.project_id, "name": "Shop", "type": "http", "url": target.url}
    costly = {"source": "body", "operator": "matches", "value": "(?:a{316}){316}"}
    medium = {"source": "body", "operator": "matches", "value": "(?:a{100}){100}"}
    small = {"source": "body", "operator": "matches", "value": "ok"}
    exploding = {"source": "json", "operator": "exists", "path": "$..*..*..*"}
    for assertions, field in (
        ([costly] * 20, "assertions.0.value"),
        ([medium, medium], "assertions.1.value"),
        ([small, small, small], "assertions.2.operator"),
        ([small, exploding], "assertions.1.path"),
    ):
        refused = await client.post(
            "/monitors", headers=cast.alice.headers, json={**base, "assertions": assertions}
        )
        assert field in assert_problem(refused, 422)["detail"], (assertions[-1], refused.text)
