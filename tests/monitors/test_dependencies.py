"""Monitor dependencies: the graph's rules (property-tested against the standard library's
topological sort), the API's walls and errors, and outages end to end through the ingester: a
child's failures while its parent is down alert no one and are listed under the parent's
incident; a child still down when the parent recovers alerts then."""

from __future__ import annotations

import asyncio
import graphlib
import itertools
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from tests.app_settings import overriding, plans
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import create_monitor, ingest
from upwatch.incidents.rules import down_parent
from upwatch.kit.clock import ManualClock
from upwatch.models import Alert, Incident, Monitor
from upwatch.monitors.dependency_graph import cycle_through

NODES = [f"m{i}" for i in range(6)]


settings_overrides = overriding(
    allow_private_targets=True,
    plans_file=plans(
        "[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = 1000\napiCallsPerDay = 1000000\n"
    ),
    access_token_minutes=600,
)


def acyclic(graph: dict[str, list[str]]) -> bool:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        return False
    return True


@given(
    st.dictionaries(st.sampled_from(NODES), st.lists(st.sampled_from(NODES), max_size=3)),
    st.sampled_from(NODES),
    st.lists(st.sampled_from(NODES), max_size=3),
)
def test_a_cycle_is_found_exactly_when_the_new_parents_would_close_one(
    graph: dict[str, list[str]], monitor: str, parents: list[str]
) -> None:
    # The other monitors' graph is acyclic, as the API keeps it.
    existing = {m: [p for p in ps if p != m] for m, ps in graph.items() if m != monitor}
    if not acyclic(existing):
        return
    path = cycle_through(existing, monitor, parents)
    assert (path is None) == acyclic({**existing, monitor: parents})
    if path is not None:
        assert path[0] == path[-1] == monitor
        edges = {**existing, monitor: parents}
        assert all(b in edges.get(a, []) for a, b in itertools.pairwise(path))


def test_the_first_parent_that_is_down_holds_the_child_back() -> None:
    assert down_parent([("a", "up"), ("b", "down"), ("c", "down")]) == "b"
    assert down_parent([("a", "up"), ("b", "degraded"), ("c", "paused")]) is None


async def parent_and_child(
    client: httpx.AsyncClient, cast: Cast, **child_fields: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    parent = await create_monitor(
        client, cast.alice, cast.project_id, name="Database", url="http://127.0.0.1:9/db",
        intervalSeconds=300, retries=0,
    )  # fmt: skip
    child = await create_monitor(
        client, cast.alice, cast.project_id, name="Shop", url="http://127.0.0.1:9/shop",
        intervalSeconds=300, retries=0, dependsOn=[parent["id"]], **child_fields,
    )  # fmt: skip
    return parent, child


async def test_dependencies_are_monitors_of_the_same_project_without_cycles(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    parent, child = await parent_and_child(client, cast)
    assert child["dependsOn"] == [parent["id"]]
    grandchild = await as_alice.monitor(
        name="Checkout", url="http://127.0.0.1:9/c", intervalSeconds=300, dependsOn=[child["id"]]
    )
    path = f"/monitors/{parent['id']}"
    cycle = await client.patch(
        path, headers=cast.bob.headers, json={"dependsOn": [grandchild["id"]]}
    )
    detail = assert_problem(cycle, 422)["detail"]
    assert f"{parent['id']} -> {grandchild['id']} -> {child['id']} -> {parent['id']}" in detail
    itself = await client.patch(path, headers=cast.bob.headers, json={"dependsOn": [parent["id"]]})
    assert "dependsOn" in assert_problem(itself, 422)["detail"]
    unknown = await client.patch(path, headers=cast.bob.headers, json={"dependsOn": ["nope"]})
    assert "not other monitors of the project: nope" in assert_problem(unknown, 422)["detail"]
    # Charlie's monitor cannot depend on Alice's.
    other = await client.post("/projects", headers=cast.charlie.headers, json={"name": "C"})
    charlies = InProject(client, cast.charlie, other.json()["id"])
    mine = {"name": "Mine", "type": "http", "url": "http://127.0.0.1:9/", "intervalSeconds": 300}
    refused = await charlies.post("/monitors", **mine, dependsOn=[parent["id"]])
    assert "dependsOn" in assert_problem(refused, 422)["detail"]
    # Deleting a parent takes it out of its children's lists.
    assert (await client.delete(f"/monitors/{child['id']}", headers=cast.alice.headers)).is_success
    left = await client.get(f"/monitors/{grandchild['id']}", headers=cast.alice.headers)
    assert left.json()["dependsOn"] == []


async def test_a_child_down_with_its_parent_alerts_no_one_until_the_parent_recovers(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    await as_alice.provider(type="webhook", name="ops", config={"url": "http://127.0.0.1:9/hook"})
    parent, child = await parent_and_child(client, cast)
    engine, now = app.state.engine, clock.now()
    await ingest(engine, parent["id"], now, ok=False)
    await ingest(engine, child["id"], now + timedelta(seconds=10), ok=False)

    async def incidents_of(monitor: dict[str, Any]) -> list[dict[str, Any]]:
        answer = await client.get(
            "/incidents", headers=cast.alice.headers, params={"monitorId": monitor["id"]}
        )
        result: list[dict[str, Any]] = answer.json()
        return result

    (outage,) = await incidents_of(parent)
    assert await incidents_of(child) == []
    assert outage["affectedMonitorIds"] == [child["id"]]
    assert "1 dependent monitor affected" in outage["updates"][-1]["message"]
    assert outage["updates"][-1]["internal"] is True
    # The parent recovers; the child is still down and now alerts.
    await ingest(engine, parent["id"], now + timedelta(minutes=5), ok=True)
    (held,) = await incidents_of(child)
    assert held["status"] == "investigating"
    assert "still down after Database" in held["description"]
    alerts = await client.get(f"/incidents/{held['id']}/alerts", headers=cast.alice.headers)
    assert [a["event"] for a in alerts.json()] == ["incident.opened"]
    await ingest(engine, child["id"], now + timedelta(minutes=10), ok=True)
    assert (await incidents_of(child))[0]["status"] == "resolved"


# Whatever the results, in any order: no incident and no outage alert of a child is written by
# a result that arrives while its parent is down, nor by a result inside a maintenance window.
steps = st.lists(
    st.tuples(st.sampled_from(["parent", "child"]), st.booleans(), st.booleans()),
    min_size=1,
    max_size=12,
)


async def test_no_child_alerts_while_its_parent_is_down_and_nothing_alerts_in_maintenance(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    await as_alice.provider(type="webhook", name="ops", config={"url": "http://127.0.0.1:9/hook"})
    engine, loop, start = app.state.engine, asyncio.get_running_loop(), clock.now()

    async def seen(child_id: str, parent_id: str) -> tuple[str, int, int]:
        """The parent's status, the child's incidents, and every outage alert written so far
        (a child's own incident, opened before, still reports its recovery)."""
        async with app.state.runtime.db.sessionmaker() as session:
            parent = await session.get(Monitor, parent_id)
            incidents = await session.scalar(
                select(func.count()).select_from(Incident).where(Incident.monitor_id == child_id)
            )
            alerts = await session.scalar(
                select(func.count()).select_from(Alert).where(Alert.event == "incident.opened")
            )
        assert parent is not None
        return parent.status, int(incidents or 0), int(alerts or 0)

    async def example(sequence: list[tuple[str, bool, bool]]) -> None:
        parent, child = await parent_and_child(client, cast)
        ids = {"parent": parent["id"], "child": child["id"]}
        # The child is in maintenance during the steps marked so: a window per step.
        for index, (_, _, held) in enumerate(sequence):
            if held:
                at = start + timedelta(minutes=index)
                made = await as_alice.post(
                    "/maintenance-windows",
                    title="Upgrade",
                    startsAt=at.isoformat(),
                    endsAt=(at + timedelta(seconds=30)).isoformat(),
                    monitorIds=[child["id"]],
                )
                assert made.status_code == 201, made.text
        for index, (who, ok, held) in enumerate(sequence):
            parent_status, incidents, alerts = await seen(child["id"], parent["id"])
            await ingest(engine, ids[who], start + timedelta(minutes=index, seconds=10), ok)
            if who == "child" and (parent_status == "down" or held):
                _, incidents_after, alerts_after = await seen(child["id"], parent["id"])
                assert (incidents_after, alerts_after) == (incidents, alerts), sequence
        for monitor in (child, parent):
            await client.delete(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
        for window in (await client.get("/maintenance-windows", headers=cast.alice.headers)).json():
            await client.delete(f"/maintenance-windows/{window['id']}", headers=cast.alice.headers)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(steps)
    def run(sequence: list[tuple[str, bool, bool]]) -> None:
        asyncio.run_coroutine_threadsafe(example(sequence), loop).result(timeout=120)

    await asyncio.to_thread(run)


def test_a_chain_of_thousands_of_monitors_is_searched_without_recursion() -> None:
    chain = {f"m{i}": [f"m{i + 1}"] for i in range(5000)}
    cycle = cycle_through(chain, "m5000", ["m0"])
    assert cycle is not None
    assert (cycle[0], cycle[1], cycle[-2], cycle[-1], len(cycle)) == (
        "m5000",
        "m0",
        "m4999",
        "m5000",
        5002,
    )
    assert cycle_through(chain, "x", ["m0"]) is None
