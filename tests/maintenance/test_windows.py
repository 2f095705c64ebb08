"""Maintenance windows over HTTP: the cast's walls, every error, and checks during a window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import create_monitor, ingest, post_in_project
from upwatch.kit.clock import ManualClock
from upwatch.models import DailyAggregate
from upwatch.runtime import Runtime

settings_overrides = overriding(allow_private_targets=True)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def make_window(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, **fields: Any
) -> dict[str, Any]:
    """An hour of maintenance from an hour ago, over the whole project, unless ``fields`` say
    otherwise."""
    now = clock.now()
    body = {
        "projectId": cast.project_id,
        "title": "Database upgrade",
        "startsAt": iso(now - timedelta(hours=1)),
        "endsAt": iso(now + timedelta(hours=1)),
        **fields,
    }
    made = await client.post("/maintenance-windows", headers=cast.alice.headers, json=body)
    assert made.status_code == 201, made.text
    result: dict[str, Any] = made.json()
    return result


async def test_a_member_schedules_maintenance_and_reads_whether_it_is_on(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    window = await make_window(client, cast, clock)
    assert window["projectId"] == cast.project_id
    assert window["monitorIds"] is None  # the whole project
    assert window["active"] is True
    assert window["nextStartsAt"] is None  # one-off, and already started
    assert window["timezone"] == "UTC"
    assert window["rrule"] is None
    assert set(window) >= {"id", "title", "startsAt", "endsAt", "createdAt", "updatedAt"}

    weekly = await make_window(
        client,
        cast,
        clock,
        title="Sunday backups",
        startsAt=iso(clock.now() + timedelta(hours=2)),
        endsAt=iso(clock.now() + timedelta(hours=3)),
        rrule="FREQ=WEEKLY",
        timezone="Europe/Paris",
    )
    assert weekly["active"] is False
    assert weekly["nextStartsAt"] == weekly["startsAt"]

    for who in (cast.alice, cast.bob):
        listed = await client.get(
            "/maintenance-windows", headers=who.headers, params={"projectId": cast.project_id}
        )
        assert listed.status_code == 200, listed.text
        assert [w["id"] for w in listed.json()] == [window["id"], weekly["id"]]
        assert listed.headers["X-Total-Count"] == "2"
        got = await client.get(f"/maintenance-windows/{weekly['id']}", headers=who.headers)
        assert got.json() == weekly


async def test_charlie_sees_and_touches_nothing_of_another_project(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    window = await make_window(client, cast, clock)
    path = f"/maintenance-windows/{window['id']}"
    charlie = cast.charlie.headers
    assert (await client.get("/maintenance-windows", headers=charlie)).json() == []
    assert_problem(await client.get(path, headers=charlie), 404)
    assert_problem(await client.patch(path, headers=charlie, json={"title": "Mine"}), 404)
    assert_problem(await client.delete(path, headers=charlie), 404)
    smuggled = await post_in_project(
        client,
        cast.charlie,
        cast.project_id,
        "/maintenance-windows",
        title="Quiet, please",
        startsAt=window["startsAt"],
        endsAt=window["endsAt"],
    )
    assert_problem(smuggled, 404)
    # Alice's window is as it was.
    assert (await client.get(path, headers=cast.alice.headers)).json() == window


async def test_without_a_token_every_route_answers_401(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/maintenance-windows"), 401)
    assert_problem(await client.post("/maintenance-windows", json={}), 401)
    assert_problem(await client.get("/maintenance-windows/x"), 401)
    assert_problem(await client.patch("/maintenance-windows/x", json={}), 401)
    assert_problem(await client.delete("/maintenance-windows/x"), 401)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endsAt": "2020-01-01T00:00:00Z"}, "endsAt"),
        ({"endsAt": "2099-01-01T00:00:00Z"}, "endsAt"),  # longer than 31 days
        ({"rrule": "EVERY SUNDAY"}, "rrule"),
        ({"rrule": "FREQ=MINUTELY"}, "rrule"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"startsAt": "2026-01-01T00:00:00"}, "startsAt"),  # no time zone
        ({"monitorIds": []}, "monitorIds"),
        ({"monitorIds": ["not-a-monitor"]}, "monitorIds"),
        ({"title": ""}, "title"),
        ({"titel": "Typo"}, "titel"),
    ],
)
async def test_a_window_that_cannot_work_is_refused_naming_the_field(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, change: dict[str, Any], field: str
) -> None:
    body = {
        "projectId": cast.project_id,
        "title": "Upgrade",
        "startsAt": iso(clock.now()),
        "endsAt": iso(clock.now() + timedelta(hours=1)),
        **change,
    }
    answer = await client.post("/maintenance-windows", headers=cast.alice.headers, json=body)
    problem = assert_problem(answer, 422)
    assert [e["field"] for e in problem["errors"]] == [field]


async def test_a_window_covers_only_monitors_of_its_own_project(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    own = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Mine"})
    theirs = await create_monitor(
        client, cast.charlie, own.json()["id"], url="http://127.0.0.1:9/", intervalSeconds=300
    )
    answer = await as_alice.post(
        "/maintenance-windows",
        title="Upgrade",
        startsAt=iso(clock.now()),
        endsAt=iso(clock.now() + timedelta(hours=1)),
        monitorIds=[theirs["id"]],
    )
    problem = assert_problem(answer, 422)
    assert theirs["id"] in problem["detail"]


async def test_a_window_is_changed_field_by_field_and_deleted(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    window = await make_window(client, cast, clock, rrule="FREQ=DAILY")
    path = f"/maintenance-windows/{window['id']}"
    bob = cast.bob.headers
    changed = await client.patch(
        path, headers=bob, json={"monitorIds": [monitor["id"]], "title": "Nightly"}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["monitorIds"] == [monitor["id"]]
    assert changed.json()["title"] == "Nightly"
    assert changed.json()["rrule"] == "FREQ=DAILY"
    one_off = await client.patch(path, headers=bob, json={"rrule": None, "monitorIds": None})
    assert one_off.json()["rrule"] is None
    assert one_off.json()["monitorIds"] is None
    assert_problem(await client.patch(path, headers=bob, json={"title": None}), 422)
    assert_problem(await client.patch(path, headers=bob, json={"id": "x"}), 422)
    backwards = await client.patch(path, headers=bob, json={"endsAt": window["startsAt"]})
    assert assert_problem(backwards, 422)["errors"][0]["field"] == "endsAt"
    # A monitor deleted leaves the windows that listed it.
    await client.patch(path, headers=bob, json={"monitorIds": [monitor["id"]]})
    await client.delete(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert (await client.get(path, headers=bob)).json()["monitorIds"] == []
    deleted = await client.delete(path, headers=bob)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["id"] == window["id"]
    assert_problem(await client.get(path, headers=bob), 404)


async def test_a_monitor_failing_during_maintenance_opens_no_incident_until_the_window_ends(
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    clock: ManualClock,
    runtime: Runtime,
    as_alice: InProject,
) -> None:
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", intervalSeconds=300)
    await make_window(client, cast, clock, monitorIds=[monitor["id"]])  # an hour either side
    engine = app.state.engine
    now = clock.now()
    headers = cast.alice.headers
    path = f"/monitors/{monitor['id']}"
    await ingest(engine, monitor["id"], now - timedelta(hours=2), ok=True)
    before = (await client.get(path, headers=headers)).json()["status"]
    for minutes in range(5):  # down for five checks, inside the window
        await ingest(engine, monitor["id"], now + timedelta(minutes=minutes), ok=False)
    assert (await client.get(path, headers=headers)).json()["status"] == before != "down"
    assert (await client.get("/incidents", headers=headers)).json() == []
    stored = await client.get(f"/monitors/{monitor['id']}/checks", headers=headers)
    assert len(stored.json()) == 6  # checked and stored all the same

    # The first failure after the window moves the status, and the incident opens.
    await ingest(engine, monitor["id"], now + timedelta(hours=1, minutes=1), ok=False)
    assert (await client.get(path, headers=headers)).json()["status"] == "down"
    incidents = (await client.get("/incidents", headers=headers)).json()
    assert [i["monitorId"] for i in incidents] == [monitor["id"]]

    async with runtime.db.sessionmaker() as session:
        days = (
            await session.scalars(
                select(DailyAggregate).where(DailyAggregate.monitor_id == monitor["id"])
            )
        ).all()
    assert sum(d.total for d in days) == 7
    assert sum(d.maintenance_total for d in days) == 5
    assert sum(d.maintenance_down for d in days) == 5
    assert sum(d.maintenance_up for d in days) == 0


async def test_an_hourly_window_from_the_year_1700_is_saved_and_read_as_quickly_as_a_new_one(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    """The review's reproduction: dateutil walked 2.8 million hours from startsAt on the event
    loop (201 after 26 s, /readyz held as long). The rule now starts near the moment asked."""
    window = await make_window(
        client,
        cast,
        clock,
        startsAt="1700-01-01T00:00:00Z",
        endsAt="1700-01-01T00:30:00Z",
        rrule="FREQ=HOURLY",
    )
    now = clock.now()
    top = now.replace(minute=0, second=0, microsecond=0)
    assert window["active"] is (now < top + timedelta(minutes=30))
    assert window["nextStartsAt"] == iso(top + timedelta(hours=1))
    listed = await client.get(
        "/maintenance-windows", headers=cast.alice.headers, params={"projectId": cast.project_id}
    )
    assert listed.status_code == 200
    assert [w["nextStartsAt"] for w in listed.json()] == [window["nextStartsAt"]]
    ready = await client.get("/readyz")
    assert ready.status_code == 200


async def test_a_count_series_that_sparse_days_stretch_over_centuries_is_refused(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    answer = await as_alice.post(
        "/maintenance-windows",
        title="Leap days",
        startsAt="2028-01-01T00:00:00Z",
        endsAt="2028-01-01T00:30:00Z",
        rrule="FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;COUNT=1000",
    )
    assert_problem(answer, 422)
    assert "20 years" in answer.text
