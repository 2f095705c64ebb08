"""Component groups on status pages (owner API, public JSON, HTML) and the page's time zone
for the times people read; the wall between tenants around both."""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import Any

import feedparser
import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import add_component, create_monitor, create_page, ingest
from upwatch.kit.clock import ManualClock

settings_overrides = overriding(status_page_max_age_seconds=0)


async def _monitor(client: httpx.AsyncClient, cast: Cast, name: str) -> str:
    """A monitor the manual clock never checks: its state is what the test ingests."""
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        name=name,
        url=f"https://{name.lower()}.example/health",
        intervalSeconds=300,
    )
    return str(monitor["id"])


async def _group(
    client: httpx.AsyncClient, headers: dict[str, str], page_id: str, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/status-pages/{page_id}/groups", headers=headers, json=body)
    assert response.status_code == 201, response.text
    group: dict[str, Any] = response.json()
    return group


async def _read(client: httpx.AsyncClient, cast: Cast, page_id: str) -> dict[str, Any]:
    response = await client.get(f"/status-pages/{page_id}", headers=cast.alice.headers)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def test_groups_are_made_named_ordered_renamed_and_deleted_leaving_their_members_on_the_page(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    api = await _monitor(client, cast, "API")
    web = await _monitor(client, cast, "Web")
    backend = await _group(client, cast.bob.headers, page["id"], name="Backend")
    assert (backend["name"], backend["order"], backend["componentIds"]) == ("Backend", 0, [])
    assert backend["statusPageId"] == page["id"]
    assert backend["status"] == "unknown"  # nothing in it yet
    component = await add_component(
        client, cast.alice, page["id"], api, groupId=backend["id"], name="Public API"
    )
    assert (component["groupId"], component["order"]) == (backend["id"], 1)
    loose = await add_component(client, cast.alice, page["id"], web)
    assert loose["groupId"] is None
    front = await _group(client, cast.alice.headers, page["id"], name="Front")
    assert front["order"] == 3  # after the last group or component

    twice = await client.post(
        f"/status-pages/{page['id']}/groups", headers=cast.alice.headers, json={"name": "Front"}
    )
    assert_problem(twice, 409)
    groups = f"/status-pages/{page['id']}/groups"
    clash = await client.patch(
        f"{groups}/{backend['id']}", headers=cast.alice.headers, json={"name": "Front"}
    )
    assert_problem(clash, 409)
    renamed = await client.patch(
        f"{groups}/{backend['id']}",
        headers=cast.alice.headers,
        json={"name": "Services", "order": 7},
    )
    assert renamed.status_code == 200, renamed.text
    assert (renamed.json()["name"], renamed.json()["order"]) == ("Services", 7)
    assert renamed.json()["componentIds"] == [component["id"]]

    moved = await client.patch(
        f"/status-pages/{page['id']}/components/{loose['id']}",
        headers=cast.alice.headers,
        json={"groupId": front["id"]},
    )
    assert moved.json()["groupId"] == front["id"]
    read = await _read(client, cast, page["id"])
    assert [(g["name"], g["componentIds"]) for g in read["groups"]] == [
        ("Front", [loose["id"]]),
        ("Services", [component["id"]]),
    ]
    assert [c["groupId"] for c in read["components"]] == [backend["id"], front["id"]]

    out = await client.patch(
        f"/status-pages/{page['id']}/components/{loose['id']}",
        headers=cast.alice.headers,
        json={"groupId": None},
    )
    assert out.json()["groupId"] is None
    deleted = await client.delete(f"{groups}/{backend['id']}", headers=cast.alice.headers)
    assert deleted.json() == {"id": backend["id"], "deleted": True}
    assert_problem(
        await client.delete(f"{groups}/{backend['id']}", headers=cast.alice.headers), 404
    )
    read = await _read(client, cast, page["id"])
    assert [g["name"] for g in read["groups"]] == ["Front"]
    assert [(c["id"], c["groupId"]) for c in read["components"]] == [
        (component["id"], None),
        (loose["id"], None),
    ]


async def test_a_component_can_only_join_a_group_of_its_own_page(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    upgraded = await client.post("/subscriptions/upgrade", headers=cast.alice.headers, json={})
    assert upgraded.status_code == 200  # a second page in the project
    page = await as_alice.page(slug="shop")
    other_page = await as_alice.page(slug="blog")
    api = await _monitor(client, cast, "API")
    elsewhere = await _group(client, cast.alice.headers, other_page["id"], name="Blog")
    own = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    charlies = await create_page(client, cast.charlie, own.json()["id"], slug="charlie")
    foreign = await _group(client, cast.charlie.headers, charlies["id"], name="Charlie's")

    url = f"/status-pages/{page['id']}/components"
    for group_id in (elsewhere["id"], foreign["id"], "0" * 32):
        refused = await client.post(
            url, headers=cast.alice.headers, json={"monitorId": api, "groupId": group_id}
        )
        assert [e["field"] for e in assert_problem(refused, 422)["errors"]] == ["groupId"]
    component = await add_component(client, cast.alice, page["id"], api)
    moved = await client.patch(
        f"{url}/{component['id']}", headers=cast.alice.headers, json={"groupId": foreign["id"]}
    )
    assert [e["field"] for e in assert_problem(moved, 422)["errors"]] == ["groupId"]
    # A group is reached through its own page only.
    wrong_page = await client.patch(
        f"/status-pages/{page['id']}/groups/{elsewhere['id']}",
        headers=cast.alice.headers,
        json={"name": "Mine"},
    )
    assert_problem(wrong_page, 404)


async def test_charlie_can_neither_see_nor_touch_alices_groups(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    group = await _group(client, cast.alice.headers, page["id"], name="Backend")
    headers = cast.charlie.headers
    base = f"/status-pages/{page['id']}/groups"
    for response in (
        await client.post(base, headers=headers, json={"name": "Mine"}),
        await client.patch(f"{base}/{group['id']}", headers=headers, json={"name": "Mine"}),
        await client.delete(f"{base}/{group['id']}", headers=headers),
    ):
        assert_problem(response, 404)
    read = await _read(client, cast, page["id"])
    assert [g["name"] for g in read["groups"]] == ["Backend"]


async def _grouped_page(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, **fields: Any
) -> dict[str, Any]:
    """Backend (API down, Database up), Front (Web up) and an ungrouped Mail between them;
    an empty Spare group."""
    page = await create_page(client, cast.alice, cast.project_id, slug="shop", **fields)
    headers = cast.alice.headers
    backend = await _group(client, headers, page["id"], name="Backend", order=0)
    front = await _group(client, headers, page["id"], name="Front", order=2)
    await _group(client, headers, page["id"], name="Spare", order=3)
    ids = {}
    for name, group, order in (
        ("API", backend, 0),
        ("Database", backend, 1),
        ("Mail", None, 1),
        ("Web", front, 0),
    ):
        monitor = await _monitor(client, cast, name)
        ids[name] = monitor
        extra = {"groupId": group["id"]} if group else {}
        component = await add_component(
            client, cast.alice, page["id"], monitor, order=order, **extra
        )
        ids[f"{name} component"] = component["id"]
    now = clock.now()
    for name in ("Database", "Mail", "Web"):
        await ingest(app.state.engine, ids[name], now - timedelta(minutes=5), ok=True)
    await ingest(app.state.engine, ids["API"], now - timedelta(minutes=5), ok=False)
    return {**page, "ids": ids, "backend": backend, "front": front}


async def test_the_public_json_lists_groups_with_their_worst_members_status_and_keeps_components(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    page = await _grouped_page(client, cast, app, clock)
    ids = page["ids"]
    body = (await client.get("/status-pages/public/slug/shop")).json()
    assert body["groups"] == [
        {
            "id": page["backend"]["id"],
            "name": "Backend",
            "status": "major_outage",
            "componentIds": [ids["API component"], ids["Database component"]],
            "order": 0,
        },
        {
            "id": page["front"]["id"],
            "name": "Front",
            "status": "operational",
            "componentIds": [ids["Web component"]],
            "order": 2,
        },
    ]  # the empty group is the owner's business
    # Every component, grouped or not, in the shape old clients know.
    assert [c["name"] for c in body["components"]] == ["API", "Web", "Database", "Mail"]
    for component in body["components"]:
        assert set(component) == {"id", "name", "description", "status", "uptime90d", "days"}
    assert body["timeZone"] == "UTC"


async def test_the_html_page_shows_each_group_under_a_header_with_its_status_in_their_order(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    page = await _grouped_page(client, cast, app, clock)
    ids = page["ids"]
    html = (await client.get("/s/shop")).text
    backend = html.index(f'id="group-{page["backend"]["id"]}"')
    mail = html.index(f'id="component-{ids["Mail component"]}"')
    front = html.index(f'id="group-{page["front"]["id"]}"')
    assert backend < mail < front  # groups and ungrouped components share one order
    assert "Spare" not in html
    # A group in trouble is open, its header saying its worst member's status; one that is
    # fine is folded, members still in the page for those who open it.
    backend_html = html[backend:mail]
    assert re.search(
        r"<details open>\s*<summary><h3>Backend</h3> "
        r'<span class="state state-major_outage">Major outage</span></summary>',
        backend_html,
    )
    for name in ("API", "Database"):
        assert f'id="component-{ids[name + " component"]}"' in backend_html
    front_html = html[front:]
    assert re.search(
        r"<details>\s*<summary><h3>Front</h3> "
        r'<span class="state state-operational">Operational</span></summary>',
        front_html,
    )
    assert f'id="component-{ids["Web component"]}"' in front_html
    assert html.count('<li class="component"') == 4
    assert html.count('<rect class="day day-') == 4 * 90


async def test_a_page_without_groups_lists_its_components_as_before(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    page = await create_page(client, cast.alice, cast.project_id, slug="shop")
    for name in ("API", "Web"):
        await add_component(client, cast.alice, page["id"], await _monitor(client, cast, name))
    html = (await client.get("/s/shop")).text
    assert "<details" not in html
    assert html.index("<h3>API</h3>") < html.index("<h3>Web</h3>")
    assert (await client.get("/status-pages/public/slug/shop")).json()["groups"] == []


async def test_a_time_zone_must_be_an_iana_name_and_defaults_to_utc(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    assert page["timeZone"] == "UTC"
    for zone in ("Mars/Olympus_Mons", "utc+2", "", "Europe/Paris\n"):
        refused = await client.patch(
            f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"timeZone": zone}
        )
        assert [e["field"] for e in assert_problem(refused, 422)["errors"]] == ["timeZone"]
    made = await client.post(
        "/status-pages",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "name": "X", "slug": "x", "timeZone": "Nowhere"},
    )
    assert_problem(made, 422)
    changed = await client.patch(
        f"/status-pages/{page['id']}",
        headers=cast.alice.headers,
        json={"timeZone": "America/New_York"},
    )
    assert changed.json()["timeZone"] == "America/New_York"
    null = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"timeZone": None}
    )
    assert_problem(null, 422)


def _shown(moment: datetime, zone: str) -> str:
    return moment.astimezone(zoneinfo.ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")


async def test_the_html_page_and_feeds_show_times_in_the_pages_zone_and_the_json_in_utc(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    # Kolkata keeps one offset all year, half an hour off any whole-hour zone.
    page = await create_page(
        client, cast.alice, cast.project_id, slug="shop", timeZone="Asia/Kolkata"
    )
    monitor = await _monitor(client, cast, "Checkout")
    await add_component(client, cast.alice, page["id"], monitor)
    failed_at = clock.now() - timedelta(minutes=5)
    await ingest(app.state.engine, monitor, failed_at, ok=False)

    body = (await client.get("/status-pages/public/slug/shop")).json()
    assert body["timeZone"] == "Asia/Kolkata"
    (incident,) = body["incidents"]
    started = datetime.fromisoformat(incident["startedAt"])
    assert started.utcoffset() == timedelta(0)  # the JSON keeps UTC

    html = (await client.get("/s/shop")).text
    local = _shown(started, "Asia/Kolkata")
    assert local.endswith(" IST")
    assert f">{local}</time>" in html
    assert f">{_shown(started, 'UTC')}</time>" not in html
    # Machines still read UTC in the datetime attribute.
    assert started.astimezone(UTC).isoformat().replace("+00:00", "Z") in html
    assert f">{_shown(clock.now(), 'Asia/Kolkata')}</time> · Powered by Upwatch" in html

    for kind in ("rss", "atom"):
        parsed = feedparser.parse((await client.get(f"/s/shop/feed.{kind}")).content)
        (entry,) = parsed.entries
        text = entry.description if kind == "rss" else entry.content[0].value
        assert text.startswith(f"{local} investigating: ")

    await client.patch(
        f"/status-pages/{page['id']}", headers=cast.alice.headers, json={"timeZone": "UTC"}
    )
    assert f">{_shown(started, 'UTC')}</time>" in (await client.get("/s/shop")).text
