"""The public page's JSON (seed 11, contract §10): what a visitor sees, built from monitor
states, day aggregates and incidents; what it never shows; and the snapshot that serves a
flood of visitors with one build."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import WAIT_SECONDS, Cast, InProject, assert_problem, eventually
from tests.factories import add_component, create_monitor, ingest
from upwatch.kit.clock import ManualClock
from upwatch.statuspages import snapshot
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.snapshot import FULL_READ_SECONDS

SECRET = "s3cret-api-key-value"


# Built on every visit, so each read shows the ingests before it; the snapshot's own
# tests below set a maximum age.
settings_overrides = overriding(status_page_max_age_seconds=0)


async def _monitor(client: httpx.AsyncClient, cast: Cast, name: str) -> str:
    """A monitor with a secret header and a request body, which the manual clock never
    checks by itself: the results are those the test ingests."""
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        name=name,
        url="https://shop-backend.example/health?token=query-secret",
        intervalSeconds=300,
        method="POST",
        body='{"probe": "body-secret"}',
        headers={"X-Api-Key": SECRET},
        secretHeaders=["X-Api-Key"],
    )
    return str(monitor["id"])


async def _public(client: httpx.AsyncClient, slug: str) -> dict[str, Any]:
    response = await client.get(f"/status-pages/public/slug/{slug}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_visitor_sees_components_their_90_days_and_incidents_without_a_token(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop", theme="dark")
    api = await _monitor(client, cast, "API internal name")
    web = await _monitor(client, cast, "Web")
    api_component = await add_component(
        client, cast.alice, page["id"], api, name="Public API", description="REST"
    )
    web_component = await add_component(client, cast.alice, page["id"], web)
    engine = app.state.engine
    now = clock.now()
    # Three days ago all went well; two days ago the API failed one check in four; today
    # the web shop is down.
    for hours in (0, 6, 12, 18):
        at = now - timedelta(days=3) + timedelta(hours=hours) - timedelta(hours=now.hour)
        await ingest(engine, api, at, ok=True)
        await ingest(engine, web, at, ok=True)
    for hours, ok in ((0, True), (6, False), (12, True), (18, True)):
        at = now - timedelta(days=2) + timedelta(hours=hours) - timedelta(hours=now.hour)
        await ingest(engine, api, at, ok=ok)
    await ingest(engine, web, now - timedelta(minutes=1), ok=False)
    await client.patch(
        f"/status-pages/{page['id']}/status",
        headers=cast.alice.headers,
        json={"message": "The shop is down", "componentIds": [web_component["id"]]},
    )

    body = await _public(client, "shop")
    assert (body["name"], body["slug"], body["theme"]) == ("Shop status", "shop", "dark")
    assert body["overallStatus"] == "partial_outage"
    assert body["message"]["message"] == "The shop is down"
    assert body["message"]["componentIds"] == [web_component["id"]]
    first, second = body["components"]
    assert (first["id"], first["name"], first["description"]) == (
        api_component["id"],
        "Public API",
        "REST",
    )
    assert (first["status"], second["status"]) == ("operational", "major_outage")
    days = first["days"]
    assert len(days) == 90
    assert days[-1]["date"] == now.date().isoformat()
    assert days[0]["date"] == (now.date() - timedelta(days=89)).isoformat()
    assert [d["status"] for d in days[-4:]] == [
        "operational",
        "major_outage",  # one of four failed: 75 % uptime
        "no_data",
        "no_data",
    ]
    assert [d["uptimePercentage"] for d in days[-4:-2]] == [100.0, 75.0]
    assert all(
        d == {"date": d["date"], "uptimePercentage": None, "status": "no_data"} for d in days[:-4]
    )
    assert first["uptime90d"] == 87.5
    # Newest first: the web shop's open outage, then the API's, resolved within hours.
    web_outage, api_outage = body["incidents"]
    assert web_outage["componentIds"] == [web_component["id"]]
    assert (web_outage["status"], web_outage["resolvedAt"]) == ("investigating", None)
    assert web_outage["title"] == "Web is down"
    assert [u["message"] for u in web_outage["updates"]] == [
        "Web is not responding as it should. We are looking into it."
    ]
    assert api_outage["componentIds"] == [api_component["id"]]
    assert api_outage["title"] == "Public API is down"  # the page's name, not the monitor's
    assert api_outage["status"] == "resolved"
    assert [u["status"] for u in api_outage["updates"]] == ["investigating", "resolved"]


async def test_the_public_answer_leaks_no_target_header_secret_or_internal_name(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    monitor = await _monitor(client, cast, "db-primary.internal")
    await add_component(client, cast.alice, page["id"], monitor, name="Database")
    await ingest(app.state.engine, monitor, clock.now(), ok=False)
    response = await client.get("/status-pages/public/slug/shop")
    assert response.status_code == 200
    text = response.text
    for leak in (
        "shop-backend",
        "body-secret",
        "query-secret",
        SECRET,
        "X-Api-Key",
        "db-primary.internal",
        monitor,  # not even the monitor's id
        cast.project_id,
        cast.alice.email,
        "late",  # the probe's error text
    ):
        assert leak not in text, leak


async def test_a_private_page_is_a_404_exactly_like_a_missing_one(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    await as_alice.page(slug="internal", isPublic=False)
    private = await client.get("/status-pages/public/slug/internal")
    missing = await client.get("/status-pages/public/slug/nothing-here")
    private_problem, missing_problem = assert_problem(private, 404), assert_problem(missing, 404)
    assert private_problem.get("detail") == missing_problem.get("detail")
    assert private.headers.get("ETag") is None


async def test_another_site_may_read_the_public_json_but_nothing_else_is_opened_to_it(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.page(slug="open-data")
    origin = {"Origin": "https://dashboard.example"}
    for _ in range(2):  # built by the route, then served from its snapshot
        data = await client.get("/status-pages/public/slug/open-data", headers=origin)
        assert data.status_code == 200
        assert data.headers["Access-Control-Allow-Origin"] == "*"
    page = await client.get("/s/open-data", headers=origin)
    assert page.status_code == 200
    assert "Access-Control-Allow-Origin" not in page.headers
    own = await client.get("/monitors", headers={**origin, **cast.alice.headers})
    assert "Access-Control-Allow-Origin" not in own.headers


async def test_incidents_resolved_more_than_14_days_ago_leave_the_page(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    monitor = await _monitor(client, cast, "API")
    await add_component(client, cast.alice, page["id"], monitor)
    now, engine = clock.now(), app.state.engine
    for days_ago, ok in ((20, False), (19, True), (3, False), (2, True)):
        await ingest(engine, monitor, now - timedelta(days=days_ago), ok=ok)
    body = await _public(client, "shop")
    (shown,) = body["incidents"]
    assert shown["status"] == "resolved"
    assert shown["resolvedAt"].startswith((now - timedelta(days=2)).date().isoformat())
    assert body["overallStatus"] == "operational"


class TestTheSnapshot:
    settings_overrides = overriding(status_page_max_age_seconds=600)

    async def test_a_flood_of_visitors_costs_one_build_and_an_edit_shows_at_once(
        self, client: httpx.AsyncClient, cast: Cast, app: FastAPI, as_alice: InProject
    ) -> None:
        page = await as_alice.page(slug="shop")
        snapshots = app.state.status_page_snapshots
        before = snapshots.builds
        answers = await asyncio.gather(
            *(client.get("/status-pages/public/slug/shop") for _ in range(50))
        )
        assert {a.status_code for a in answers} == {200}
        assert snapshots.builds == before + 1
        renamed = await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"name": "Shop live"}
        )
        assert renamed.status_code == 200
        assert (await _public(client, "shop"))["name"] == "Shop live"
        assert snapshots.builds == before + 2

    @pytest.fixture
    async def built(
        self, client: httpx.AsyncClient, app: FastAPI, as_alice: InProject
    ) -> snapshot.Snapshots:
        """The snapshots once the shop's page is made and built for a first visit."""
        await as_alice.page(slug="shop")
        await _public(client, "shop")
        snapshots: snapshot.Snapshots = app.state.status_page_snapshots
        return snapshots

    async def test_a_stale_page_is_served_at_once_while_a_single_rebuild_runs(
        self, client: httpx.AsyncClient, built: snapshot.Snapshots
    ) -> None:
        snapshots = built
        before = snapshots.builds
        # Past its maximum age (the snapshot's build time moved back, not a wait).
        stale = snapshots._pages["shop"]
        snapshots._pages["shop"] = replace(stale, built_at=stale.built_at - 3600)
        answers = await asyncio.gather(
            *(client.get("/status-pages/public/slug/shop") for _ in range(50))
        )
        assert {a.status_code for a in answers} == {200}
        await eventually(lambda: not snapshots._refreshing and snapshots.builds > before)
        assert snapshots.builds == before + 1
        assert snapshots._pages["shop"].built_at > stale.built_at

    async def test_a_rebuild_reads_the_last_two_days_and_older_days_again_in_a_full_read(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        app: FastAPI,
        clock: ManualClock,
        as_alice: InProject,
    ) -> None:
        page = await as_alice.page(slug="shop")
        monitor = await _monitor(client, cast, "API")
        await add_component(client, cast.alice, page["id"], monitor, name="API")
        snapshots = app.state.status_page_snapshots
        days = (await _public(client, "shop"))["components"][0]["days"]
        assert {d["status"] for d in days} == {"no_data"}
        now = clock.now()
        for back in (0, 1, 10):  # today, yesterday (late results) and an older day
            await ingest(app.state.engine, monitor, now - timedelta(days=back), ok=True)

        snapshots.changed(page["id"])
        days = (await _public(client, "shop"))["components"][0]["days"]
        assert [d["status"] for d in days[-2:]] == ["operational", "operational"]
        assert days[-11]["status"] == "no_data"  # taken from the earlier build

        # Past FULL_READ_SECONDS since the last full read (its time moved back, not a wait).
        snapshots._read_all_at[page["id"]] -= FULL_READ_SECONDS
        snapshots.changed(page["id"])
        days = (await _public(client, "shop"))["components"][0]["days"]
        assert days[-11]["status"] == "operational"

    async def test_a_flood_on_an_unknown_host_costs_one_lookup_until_a_page_takes_that_domain(
        self,
        client: httpx.AsyncClient,
        monkeypatch: pytest.MonkeyPatch,
        as_alice: InProject,
    ) -> None:
        lookups = []
        by_domain = StatusPageRepository.by_domain

        async def counted(repository: StatusPageRepository, domain: str) -> Any:
            lookups.append(domain)
            return await by_domain(repository, domain)

        monkeypatch.setattr(StatusPageRepository, "by_domain", counted)
        for _ in range(20):
            assert_problem(await client.get("/", headers={"Host": "status.shop.example"}), 404)
        assert lookups == ["status.shop.example"]
        await as_alice.page(customDomain="status.shop.example")
        page = await client.get("/", headers={"Host": "status.shop.example"})
        assert page.status_code == 200

    async def test_an_incident_posted_through_the_api_shows_on_the_page_at_once(
        self, client: httpx.AsyncClient, cast: Cast, as_alice: InProject
    ) -> None:
        page = await as_alice.page(slug="shop")
        monitor = await _monitor(client, cast, "API")
        await add_component(client, cast.alice, page["id"], monitor, name="API")
        assert (await _public(client, "shop"))["incidents"] == []
        created = await client.post(
            "/incidents",
            headers=cast.bob.headers,
            json={"projectId": cast.project_id, "monitorId": monitor, "title": "Slow API"},
        )
        assert created.status_code == 201
        assert [i["title"] for i in (await _public(client, "shop"))["incidents"]] == ["Slow API"]

    async def test_a_visitor_with_the_current_etag_gets_a_304_and_a_new_one_after_a_change(
        self, client: httpx.AsyncClient, cast: Cast, as_alice: InProject
    ) -> None:
        page = await as_alice.page(slug="shop")
        first = await client.get("/status-pages/public/slug/shop")
        etag = first.headers["ETag"]
        assert first.headers["Cache-Control"] == "public, max-age=600"
        again = await client.get("/status-pages/public/slug/shop", headers={"If-None-Match": etag})
        assert again.status_code == 304
        assert again.content == b""
        assert again.headers["ETag"] == etag
        await client.patch(
            f"/status-pages/{page['id']}/status",
            headers=cast.alice.headers,
            json={"message": "Maintenance tonight"},
        )
        changed = await client.get(
            "/status-pages/public/slug/shop", headers={"If-None-Match": etag}
        )
        assert changed.status_code == 200
        assert changed.headers["ETag"] != etag

    async def test_a_page_made_private_or_renamed_stops_answering_at_its_old_address_at_once(
        self, client: httpx.AsyncClient, cast: Cast, as_alice: InProject
    ) -> None:
        page = await as_alice.page(slug="shop")
        await _public(client, "shop")
        await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"slug": "store"}
        )
        assert_problem(await client.get("/status-pages/public/slug/shop"), 404)
        await _public(client, "store")
        await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"isPublic": False}
        )
        assert_problem(await client.get("/status-pages/public/slug/store"), 404)

    async def test_a_page_made_private_during_a_rebuild_is_a_404_at_once_and_its_etag_no_304(
        self,
        client: httpx.AsyncClient,
        cast: Cast,
        app: FastAPI,
        monkeypatch: pytest.MonkeyPatch,
        as_alice: InProject,
    ) -> None:
        page = await as_alice.page(slug="shop")
        snapshots = app.state.status_page_snapshots
        etag = (await client.get("/status-pages/public/slug/shop")).headers["ETag"]
        html_etag = (await client.get("/s/shop")).headers["ETag"]
        # The next build reads the page while it is public, then waits for ``release``.
        reading, release = asyncio.Event(), asyncio.Event()
        original = snapshot.build

        async def held(*args: Any, **kwargs: Any) -> Any:
            built = await original(*args, **kwargs)
            if not release.is_set():
                reading.set()
                await release.wait()
            return built

        monkeypatch.setattr(snapshot, "build", held)
        # Stale: the next visit is served the old snapshot and starts a rebuild beside it.
        stale = snapshots._pages["shop"]
        snapshots._pages["shop"] = replace(stale, built_at=stale.built_at - 3600)
        assert (await client.get("/status-pages/public/slug/shop")).status_code == 200
        await asyncio.wait_for(reading.wait(), WAIT_SECONDS)
        made_private = await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"isPublic": False}
        )
        assert made_private.status_code == 200
        # Visits after the change arrive while the rebuild is still in flight.
        waiting = []
        get = snapshots.get

        async def counted(slug: str) -> Any:
            waiting.append(slug)
            return await get(slug)

        monkeypatch.setattr(snapshots, "get", counted)
        visits = [
            asyncio.create_task(
                client.get("/status-pages/public/slug/shop", headers={"If-None-Match": etag})
            ),
            asyncio.create_task(client.get("/s/shop", headers={"If-None-Match": html_etag})),
            asyncio.create_task(client.get("/s/shop")),
        ]
        await eventually(lambda: len(waiting) >= len(visits))
        release.set()
        for answer in await asyncio.gather(*visits):
            assert_problem(answer, 404)
        for path, tag in (("/status-pages/public/slug/shop", etag), ("/s/shop", html_etag)):
            assert_problem(await client.get(path, headers={"If-None-Match": tag}), 404)

    async def test_pages_are_built_again_once_when_the_counts_of_their_changes_are_forgotten(
        self, client: httpx.AsyncClient, built: snapshot.Snapshots
    ) -> None:
        snapshots = built
        before = snapshots.builds
        for n in range(100_002):  # other pages: the counts kept per page are forgotten once
            snapshots.changed(f"other-{n}")
        answer = await asyncio.wait_for(client.get("/status-pages/public/slug/shop"), WAIT_SECONDS)
        assert answer.status_code == 200
        await _public(client, "shop")
        assert snapshots.builds == before + 1
