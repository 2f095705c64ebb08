"""Status pages through the HTTP API: fields, slug and domain rules, the plan's limit,
components, messages, and the wall between tenants."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Account, Cast, InProject, assert_problem
from tests.factories import add_component, create_monitor, create_page


async def _paused(
    client: httpx.AsyncClient, account: Account, project_id: str, name: str = "Shop"
) -> dict[str, Any]:
    """A monitor never checked: its component stays as the test left it."""
    return await create_monitor(
        client,
        account,
        project_id,
        name=name,
        url="https://shop.example/health",
        intervalSeconds=300,  # the free plan's shortest
        isActive=False,
    )


async def test_a_new_page_answers_201_with_its_fields_defaults_and_public_address(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    page = await create_page(client, cast.bob, cast.project_id, slug="shop")
    expected = {
        "name": "Shop status",
        "slug": "shop",
        "projectId": cast.project_id,
        "theme": "light",
        "customDomain": None,
        "description": "",
        "customCss": "",
        "customJs": "",
        "components": [],
        "message": None,
        "publicUrl": "http://upwatch.test/s/shop",
    }
    assert {name: page[name] for name in expected} == expected
    assert page["isPublic"] is True
    for field in ("id", "createdAt", "updatedAt"):
        assert page[field]


async def test_pages_are_listed_by_project_and_read_by_id(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    listed = await client.get(
        "/status-pages", headers=cast.bob.headers, params={"projectId": cast.project_id}
    )
    assert listed.status_code == 200
    assert [p["id"] for p in listed.json()] == [page["id"]]
    assert listed.headers["X-Total-Count"] == "1"
    read = await client.get(f"/status-pages/{page['id']}", headers=cast.bob.headers)
    assert read.status_code == 200
    assert read.json() == page


@pytest.mark.parametrize(
    "slug", ["Shop", "-shop", "shop-", "sh op", "shop_1", "a" * 64, "", "shöp"]
)
async def test_a_slug_outside_the_rule_is_a_422_naming_the_field(
    client: httpx.AsyncClient, cast: Cast, slug: str
) -> None:
    response = await client.post(
        "/status-pages",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "name": "Shop", "slug": slug},
    )
    problem = assert_problem(response, 422)
    assert [e["field"] for e in problem["errors"]] == ["slug"]


@pytest.mark.parametrize(
    "domain", ["localhost", "10.0.0.1", "status.example.com:8080", "-x.example.com", "a..b"]
)
async def test_a_custom_domain_that_is_no_host_name_is_a_422(
    client: httpx.AsyncClient, cast: Cast, domain: str
) -> None:
    response = await client.post(
        "/status-pages",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "name": "S", "slug": "s", "customDomain": domain},
    )
    problem = assert_problem(response, 422)
    assert [e["field"] for e in problem["errors"]] == ["customDomain"]


async def test_slugs_and_custom_domains_are_unique_across_tenants_whatever_the_letter_case(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.page(slug="shop", customDomain="Status.Shop.Example")
    own = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    other = own.json()["id"]
    taken_slug = await client.post(
        "/status-pages",
        headers=cast.charlie.headers,
        json={"projectId": other, "name": "Mine", "slug": "shop"},
    )
    assert "slug" in assert_problem(taken_slug, 409)["detail"]
    taken_domain = await client.post(
        "/status-pages",
        headers=cast.charlie.headers,
        json={
            "projectId": other,
            "name": "Mine",
            "slug": "mine",
            "customDomain": "status.shop.example",
        },
    )
    assert "custom domain" in assert_problem(taken_domain, 409)["detail"]
    mine = await create_page(client, cast.charlie, other, slug="mine")
    renamed = await client.patch(
        f"/status-pages/{mine['id']}", headers=cast.charlie.headers, json={"slug": "shop"}
    )
    assert_problem(renamed, 409)


async def test_the_free_plan_allows_one_page_per_owner_and_usage_counts_it(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.page(slug="first")
    second = await client.post(
        "/status-pages",
        headers=cast.bob.headers,  # Bob creates in Alice's project: Alice's plan counts
        json={"projectId": cast.project_id, "name": "Second", "slug": "second"},
    )
    assert "statusPageCount" in assert_problem(second, 402)["detail"]
    usage = (await client.get("/subscriptions/current", headers=cast.alice.headers)).json()
    assert usage["usage"]["statusPages"] == {"current": 1, "limit": 1, "percentage": 100.0}


async def test_an_update_changes_only_the_fields_sent_and_null_removes_the_domain(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page(customDomain="status.shop.example")
    changes: dict[str, Any] = {
        "name": "Shop systems",
        "description": "Live state of the shop",
        "isPublic": False,
        "theme": "dark",
        "customCss": "body { color: teal }",
        "customJs": "console.log('hi')",
    }
    updated = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.bob.headers, json=changes
    )
    assert updated.status_code == 200, updated.text
    body = updated.json()
    assert {k: body[k] for k in changes} == changes
    assert body["slug"] == page["slug"]
    assert body["customDomain"] == "status.shop.example"
    cleared = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.bob.headers, json={"customDomain": None}
    )
    assert cleared.json()["customDomain"] is None
    refused = await client.patch(
        f"/status-pages/{page['id']}", headers=cast.bob.headers, json={"name": None}
    )
    assert_problem(refused, 422)


async def test_components_take_the_monitors_name_come_in_order_and_can_be_renamed_and_moved(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    api = await _paused(client, cast.alice, cast.project_id, "API")
    web = await _paused(client, cast.alice, cast.project_id, "Web")
    url = f"/status-pages/{page['id']}/components"
    first = await client.post(url, headers=cast.bob.headers, json={"monitorId": api["id"]})
    assert first.status_code == 201, first.text
    component = first.json()
    assert component["statusPageId"] == page["id"]
    assert component["monitorId"] == api["id"]
    assert (component["name"], component["description"], component["order"]) == ("API", "", 0)
    assert component["status"] == "unknown"  # paused
    second = await client.post(
        url,
        headers=cast.bob.headers,
        json={"monitorId": web["id"], "name": "Storefront", "description": "What buyers see"},
    )
    assert second.json()["order"] == 1
    read = (await client.get(f"/status-pages/{page['id']}", headers=cast.bob.headers)).json()
    assert [c["name"] for c in read["components"]] == ["API", "Storefront"]

    moved = await client.patch(
        f"{url}/{component['id']}",
        headers=cast.bob.headers,
        json={"order": 5, "name": "Public API"},
    )
    assert moved.status_code == 200, moved.text
    assert (moved.json()["name"], moved.json()["order"]) == ("Public API", 5)
    read = (await client.get(f"/status-pages/{page['id']}", headers=cast.bob.headers)).json()
    assert [c["name"] for c in read["components"]] == ["Storefront", "Public API"]

    again = await client.post(url, headers=cast.bob.headers, json={"monitorId": api["id"]})
    assert_problem(again, 409)


async def test_a_component_must_show_a_monitor_of_the_pages_project(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    # Bob belongs to Alice's project and owns one of his own: he sees both monitors.
    other = await client.post("/projects", headers=cast.bob.headers, json={"name": "Blog"})
    elsewhere = await _paused(client, cast.bob, other.json()["id"])
    url = f"/status-pages/{page['id']}/components"
    wrong = await client.post(url, headers=cast.bob.headers, json={"monitorId": elsewhere["id"]})
    problem = assert_problem(wrong, 422)
    assert [e["field"] for e in problem["errors"]] == ["monitorId"]
    missing = await client.post(url, headers=cast.alice.headers, json={"monitorId": "0" * 32})
    assert_problem(missing, 404)


async def test_deleting_a_component_or_its_monitor_takes_it_off_the_page(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    one = await _paused(client, cast.alice, cast.project_id, "One")
    two = await _paused(client, cast.alice, cast.project_id, "Two")
    url = f"/status-pages/{page['id']}/components"
    first = await client.post(url, headers=cast.alice.headers, json={"monitorId": one["id"]})
    await client.post(url, headers=cast.alice.headers, json={"monitorId": two["id"]})

    deleted = await client.delete(f"{url}/{first.json()['id']}", headers=cast.alice.headers)
    assert deleted.status_code == 200
    assert deleted.json() == {"id": first.json()["id"], "deleted": True}
    gone = await client.delete(f"{url}/{first.json()['id']}", headers=cast.alice.headers)
    assert_problem(gone, 404)

    await client.delete(f"/monitors/{two['id']}", headers=cast.alice.headers)
    read = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert read["components"] == []
    # The first monitor itself stays.
    assert (
        await client.get(f"/monitors/{one['id']}", headers=cast.alice.headers)
    ).status_code == 200


async def test_a_message_is_shown_for_its_components_kept_in_history_and_cleared_by_an_empty_one(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    monitor = await _paused(client, cast.alice, cast.project_id)
    component = await add_component(client, cast.alice, page["id"], monitor["id"])
    url = f"/status-pages/{page['id']}/status"
    posted = await client.patch(
        url,
        headers=cast.bob.headers,
        json={"message": "Payments are slow; we are on it", "componentIds": [component["id"]]},
    )
    assert posted.status_code == 200, posted.text
    message = posted.json()["message"]
    assert message["message"] == "Payments are slow; we are on it"
    assert message["componentIds"] == [component["id"]]

    unknown = await client.patch(
        url, headers=cast.bob.headers, json={"message": "x", "componentIds": ["f" * 32]}
    )
    assert [e["field"] for e in assert_problem(unknown, 422)["errors"]] == ["componentIds"]

    cleared = await client.patch(url, headers=cast.bob.headers, json={"message": ""})
    assert cleared.json()["message"] is None
    history = await client.get(f"/status-pages/{page['id']}/messages", headers=cast.bob.headers)
    assert [m["message"] for m in history.json()] == ["", "Payments are slow; we are on it"]
    assert history.headers["X-Total-Count"] == "2"


async def test_charlie_sees_and_touches_none_of_alices_pages(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    monitor = await _paused(client, cast.alice, cast.project_id)
    component = await add_component(client, cast.alice, page["id"], monitor["id"])
    headers = cast.charlie.headers
    base = f"/status-pages/{page['id']}"
    listed = await client.get("/status-pages", headers=headers)
    assert listed.json() == []
    by_project = await client.get(
        "/status-pages", headers=headers, params={"projectId": cast.project_id}
    )
    assert by_project.json() == []
    for response in (
        await client.get(base, headers=headers),
        await client.patch(base, headers=headers, json={"name": "Mine"}),
        await client.delete(base, headers=headers),
        await client.post(f"{base}/components", headers=headers, json={"monitorId": monitor["id"]}),
        await client.patch(f"{base}/components/{component['id']}", headers=headers, json={}),
        await client.delete(f"{base}/components/{component['id']}", headers=headers),
        await client.patch(f"{base}/status", headers=headers, json={"message": "Mine now"}),
        await client.get(f"{base}/messages", headers=headers),
        await client.post(
            "/status-pages",
            headers=headers,
            json={"projectId": cast.project_id, "name": "Mine", "slug": "mine"},
        ),
    ):
        assert_problem(response, 404)
    # Nor can Charlie show Alice's monitor on a page of his own.
    own = await client.post("/projects", headers=headers, json={"name": "Other"})
    mine = await create_page(client, cast.charlie, own.json()["id"], slug="mine")
    borrowed = await client.post(
        f"/status-pages/{mine['id']}/components", headers=headers, json={"monitorId": monitor["id"]}
    )
    assert_problem(borrowed, 404)
    still = (await client.get(base, headers=cast.alice.headers)).json()
    assert still["name"] == page["name"]
    assert [c["id"] for c in still["components"]] == [component["id"]]
    assert still["message"] is None


async def test_deleting_a_page_frees_its_slug_and_needs_a_token(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page(slug="shop")
    assert_problem(await client.delete(f"/status-pages/{page['id']}"), 401)
    deleted = await client.delete(f"/status-pages/{page['id']}", headers=cast.alice.headers)
    assert deleted.json() == {"id": page["id"], "deleted": True}
    assert_problem(await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers), 404)
    again = await as_alice.page(slug="shop")
    assert again["slug"] == "shop"
