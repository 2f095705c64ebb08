"""A status page never says the wrong thing: open incidents decide its banner as much as its
components, components never checked say "no data", incidents without a monitor can be placed
on a page, and the first visit after a quiet spell shows what changed meanwhile."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem, eventually
from tests.factories import add_component, ingest
from upwatch.kit.clock import ManualClock
from upwatch.statuspages.snapshot import Snapshots

# Built on every visit, so each read shows what came before it; the quiet-spell tests below
# set a maximum age of their own.
settings_overrides = overriding(status_page_max_age_seconds=0)


async def _public(client: httpx.AsyncClient, slug: str) -> dict[str, Any]:
    response = await client.get(f"/status-pages/public/slug/{slug}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _html(client: httpx.AsyncClient, slug: str) -> str:
    response = await client.get(f"/s/{slug}")
    assert response.status_code == 200, response.text
    return response.text


async def _checked_monitor(
    app: FastAPI, clock: ManualClock, as_alice: InProject, name: str, ok: bool = True
) -> str:
    """A monitor that turns down on its first failure, with one check stored."""
    monitor = await as_alice.monitor(
        name=name, url="https://shop-backend.example/health", intervalSeconds=300, retries=0
    )
    await ingest(app.state.engine, monitor["id"], clock.now() - timedelta(seconds=30), ok=ok)
    return str(monitor["id"])


async def _incident(client: httpx.AsyncClient, cast: Cast, **fields: Any) -> dict[str, Any]:
    created = await client.post(
        "/incidents", headers=cast.bob.headers, json={"projectId": cast.project_id, **fields}
    )
    assert created.status_code == 201, created.text
    body: dict[str, Any] = created.json()
    return body


async def test_a_page_with_an_open_incident_never_says_operational(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    monitor = await _checked_monitor(app, clock, as_alice, "Payments")
    component = await add_component(client, cast.alice, page["id"], monitor, name="Card payments")
    body = await _public(client, "shop")
    assert body["overallStatus"] == "operational"
    assert "All systems operational" in await _html(client, "shop")

    incident = await _incident(
        client, cast, monitorId=monitor, title="Card payments fail", severity="high"
    )
    body = await _public(client, "shop")
    assert body["overallStatus"] == "partial_outage"
    assert body["components"][0]["status"] == "partial_outage"
    [shown] = body["incidents"]
    assert (shown["impact"], shown["componentIds"]) == ("partial_outage", [component["id"]])
    html = await _html(client, "shop")
    assert "All systems operational" not in html
    assert "Partial outage<span" in html
    assert "Card payments fail: affects Card payments" in html
    badge = await client.get("/s/shop/badge.svg")
    assert "partial outage" in badge.text

    for severity, expected in (("low", "degraded"), ("critical", "major_outage")):
        changed = await client.patch(
            f"/incidents/{incident['id']}", headers=cast.bob.headers, json={"severity": severity}
        )
        assert changed.status_code == 200, changed.text
        assert (await _public(client, "shop"))["overallStatus"] == expected

    resolved = await client.patch(
        f"/incidents/{incident['id']}", headers=cast.bob.headers, json={"status": "resolved"}
    )
    assert resolved.status_code == 200
    body = await _public(client, "shop")
    assert body["overallStatus"] == "operational"
    assert body["incidents"][0]["impact"] is None
    assert "All systems operational" in await _html(client, "shop")


async def test_a_low_incident_does_not_hide_a_worse_state_of_the_components(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    monitor = await _checked_monitor(app, clock, as_alice, "Payments", ok=False)
    await add_component(client, cast.alice, page["id"], monitor, name="Card payments")
    await _incident(client, cast, monitorId=monitor, title="Slow refunds", severity="low")
    body = await _public(client, "shop")
    assert body["overallStatus"] == "major_outage"
    assert body["components"][0]["status"] == "major_outage"


async def test_components_never_checked_say_no_data_and_a_page_of_them_says_so(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    fresh = await as_alice.monitor(name="New", url="https://new.example/", intervalSeconds=300)
    await add_component(client, cast.alice, page["id"], fresh["id"], name="Checkout")
    body = await _public(client, "shop")
    assert body["overallStatus"] == "unknown"
    assert body["components"][0]["status"] == "unknown"
    html = await _html(client, "shop")
    assert "No data yet" in html
    assert ">No data<" in html
    assert "operational" not in html.lower().replace("banner-operational", "")
    assert "no data" in (await client.get("/s/shop/badge.svg")).text

    checked = await _checked_monitor(app, clock, as_alice, "API")
    await add_component(client, cast.alice, page["id"], checked, name="API")
    assert (await _public(client, "shop"))["overallStatus"] == "operational"
    html = await _html(client, "shop")
    assert "All checked systems operational" in html
    assert "All systems operational" not in html


async def test_an_incident_without_a_monitor_placed_on_the_whole_page_shows_and_counts(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    upgraded = await client.post("/subscriptions/upgrade", headers=cast.alice.headers, json={})
    assert upgraded.status_code == 200  # two pages
    page = await as_alice.page(slug="shop")
    other = await as_alice.page(slug="other")
    monitor = await _checked_monitor(app, clock, as_alice, "Payments")
    await add_component(client, cast.alice, page["id"], monitor, name="Card payments")
    assert (await _public(client, "shop"))["overallStatus"] == "operational"

    incident = await _incident(
        client,
        cast,
        title="Database maintenance overrun",
        severity="high",
        statusPageIds=[page["id"]],
    )
    assert incident["statusPageIds"] == [page["id"]]
    assert incident["componentIds"] == []
    body = await _public(client, "shop")
    assert body["overallStatus"] == "partial_outage"
    # The page as a whole: no component in particular.
    assert body["components"][0]["status"] == "operational"
    [shown] = body["incidents"]
    assert (shown["title"], shown["componentIds"]) == ("Database maintenance overrun", [])
    html = await _html(client, "shop")
    assert "Active incidents" in html
    assert "Database maintenance overrun" in html
    assert "All systems operational" not in html
    assert (await _public(client, "other"))["incidents"] == []

    listed = await client.get(f"/incidents/{incident['id']}", headers=cast.alice.headers)
    assert listed.json()["statusPageIds"] == [page["id"]]
    moved = await client.patch(
        f"/incidents/{incident['id']}",
        headers=cast.alice.headers,
        json={"statusPageIds": [other["id"]]},
    )
    assert moved.status_code == 200, moved.text
    assert (await _public(client, "shop"))["incidents"] == []
    assert [i["title"] for i in (await _public(client, "other"))["incidents"]] == [
        "Database maintenance overrun"
    ]


async def test_an_incident_placed_on_chosen_components_shows_its_impact_on_them(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    api = await _checked_monitor(app, clock, as_alice, "API")
    web = await _checked_monitor(app, clock, as_alice, "Web")
    api_component = await add_component(client, cast.alice, page["id"], api, name="API")
    await add_component(client, cast.alice, page["id"], web, name="Web")
    incident = await _incident(
        client,
        cast,
        title="Database maintenance overrun",
        severity="critical",
        componentIds=[api_component["id"]],
    )
    body = await _public(client, "shop")
    assert body["overallStatus"] == "major_outage"
    assert [c["status"] for c in body["components"]] == ["major_outage", "operational"]
    assert body["incidents"][0]["componentIds"] == [api_component["id"]]
    assert "Database maintenance overrun: affects API" in await _html(client, "shop")

    # Deleting the component takes the incident off the page; the incident keeps the id.
    deleted = await client.delete(
        f"/status-pages/{page['id']}/components/{api_component['id']}",
        headers=cast.alice.headers,
    )
    assert deleted.status_code == 200
    body = await _public(client, "shop")
    assert body["incidents"] == []
    assert body["overallStatus"] == "operational"
    kept = await client.get(f"/incidents/{incident['id']}", headers=cast.alice.headers)
    assert kept.status_code == 200


async def test_an_incident_cannot_be_placed_on_a_page_or_component_of_another_project(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    own = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    assert own.status_code == 201
    theirs = InProject(client, cast.charlie, own.json()["id"])
    their_page = await theirs.page(slug="theirs")
    their_monitor = await theirs.monitor(
        name="Theirs", url="https://theirs.example/", intervalSeconds=300
    )
    their_component = await add_component(
        client, cast.charlie, their_page["id"], their_monitor["id"]
    )
    for field, value in (
        ("statusPageIds", their_page["id"]),
        ("componentIds", their_component["id"]),
        ("statusPageIds", "no-such-page"),
    ):
        refused = await client.post(
            "/incidents",
            headers=cast.alice.headers,
            json={"projectId": cast.project_id, "title": "Outage", field: [value]},
        )
        problem = assert_problem(refused, 422)
        assert problem["errors"][0]["field"] == field
    incident = await _incident(client, cast, title="Outage")
    refused = await client.patch(
        f"/incidents/{incident['id']}",
        headers=cast.alice.headers,
        json={"componentIds": [their_component["id"]]},
    )
    assert_problem(refused, 422)
    assert (await _public(client, "theirs"))["incidents"] == []
    # Charlie cannot place Alice's incident anywhere: it is not there for him.
    assert_problem(
        await client.patch(
            f"/incidents/{incident['id']}",
            headers=cast.charlie.headers,
            json={"statusPageIds": [their_page["id"]]},
        ),
        404,
    )


MAX_AGE = 0.3


class TestTheFirstVisitAfterAQuietSpell:
    settings_overrides = overriding(status_page_max_age_seconds=MAX_AGE)

    @staticmethod
    async def _quiet(snapshots: Snapshots, slug: str) -> None:
        """No visit until the page's snapshot is past its maximum age."""
        built = snapshots._pages[slug].built_at
        await eventually(lambda: time.monotonic() - built > MAX_AGE * 2)

    async def test_the_first_visit_after_a_state_change_sees_it(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        app: FastAPI,
        clock: ManualClock,
        as_alice: InProject,
    ) -> None:
        page = await as_alice.page(slug="shop")
        monitor = await _checked_monitor(app, clock, as_alice, "Payments")
        await add_component(client, cast.alice, page["id"], monitor, name="Payments")
        snapshots: Snapshots = app.state.status_page_snapshots
        assert (await _public(client, "shop"))["overallStatus"] == "operational"
        await self._quiet(snapshots, "shop")
        # The monitor goes down in the ingester (another process, in distributed mode): no
        # one tells this process's snapshots.
        await ingest(app.state.engine, monitor, clock.now(), ok=False)
        body = await _public(client, "shop")
        assert body["overallStatus"] == "major_outage"
        assert [i["status"] for i in body["incidents"]] == ["investigating"]
        assert "Major outage" in await _html(client, "shop")

        await self._quiet(snapshots, "shop")
        await ingest(app.state.engine, monitor, clock.now() + timedelta(seconds=1), ok=True)
        body = await _public(client, "shop")
        assert body["overallStatus"] == "operational"
        assert "All systems operational" in await _html(client, "shop")

    async def test_a_flood_after_a_quiet_spell_waits_for_one_rebuild_and_all_see_the_change(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        app: FastAPI,
        clock: ManualClock,
        as_alice: InProject,
    ) -> None:
        page = await as_alice.page(slug="shop")
        monitor = await _checked_monitor(app, clock, as_alice, "Payments")
        await add_component(client, cast.alice, page["id"], monitor, name="Payments")
        snapshots: Snapshots = app.state.status_page_snapshots
        await _public(client, "shop")
        await self._quiet(snapshots, "shop")
        await ingest(app.state.engine, monitor, clock.now(), ok=False)
        before = snapshots.builds
        answers = await asyncio.gather(
            *(client.get("/status-pages/public/slug/shop") for _ in range(40))
        )
        assert {a.json()["overallStatus"] for a in answers} == {"major_outage"}
        assert snapshots.builds == before + 1

    async def test_a_quiet_page_whose_state_did_not_change_is_served_at_once_and_rebuilt_beside(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        app: FastAPI,
        clock: ManualClock,
        as_alice: InProject,
    ) -> None:
        page = await as_alice.page(slug="shop")
        monitor = await _checked_monitor(app, clock, as_alice, "Payments")
        await add_component(client, cast.alice, page["id"], monitor, name="Payments")
        snapshots: Snapshots = app.state.status_page_snapshots
        await _public(client, "shop")
        first = snapshots._pages["shop"]
        await self._quiet(snapshots, "shop")
        # Another check with the same outcome: the day bar moves, the state does not.
        await ingest(app.state.engine, monitor, clock.now(), ok=True)
        before = snapshots.builds
        answers = await asyncio.gather(
            *(client.get("/status-pages/public/slug/shop") for _ in range(20))
        )
        assert {a.status_code for a in answers} == {200}
        # All of them got the snapshot they found: its marks had not moved.
        assert {a.json()["updatedAt"] for a in answers} == {answers[0].json()["updatedAt"]}
        await eventually(lambda: not snapshots._refreshing and snapshots.builds > before)
        assert snapshots.builds == before + 1
        assert snapshots._pages["shop"].built_at > first.built_at

    async def test_an_incident_opened_elsewhere_shows_at_the_first_visit_after_a_quiet_spell(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        app: FastAPI,
        clock: ManualClock,
        as_alice: InProject,
    ) -> None:
        page = await as_alice.page(slug="shop")
        monitor = await _checked_monitor(app, clock, as_alice, "Payments")
        await add_component(client, cast.alice, page["id"], monitor, name="Payments")
        snapshots: Snapshots = app.state.status_page_snapshots
        await _public(client, "shop")
        await self._quiet(snapshots, "shop")
        # As another API process would: the incident is stored, this process is not told.
        changed = snapshots.changed
        snapshots.changed = lambda page_id: None  # type: ignore[method-assign]
        try:
            await _incident(
                client,
                cast,
                title="Database maintenance overrun",
                severity="high",
                statusPageIds=[page["id"]],
            )
        finally:
            snapshots.changed = changed  # type: ignore[method-assign]
        body = await _public(client, "shop")
        assert body["overallStatus"] == "partial_outage"
        assert [i["title"] for i in body["incidents"]] == ["Database maintenance overrun"]
