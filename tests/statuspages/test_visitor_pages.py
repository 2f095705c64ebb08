"""What visitors open: the HTML page at /s/{slug} and at a custom domain, the owner's CSS
and JS in their place, feeds and badges."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import feedparser
import httpx
from defusedxml import ElementTree
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import add_component, create_monitor, create_page, ingest
from upwatch.kit.clock import ManualClock

EVIL = '</style><script>alert("owned")</script><b>'


settings_overrides = overriding(status_page_max_age_seconds=0)


async def _page_with_an_incident(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock, **fields: Any
) -> dict[str, Any]:
    page = await create_page(client, cast.alice, cast.project_id, slug="shop", **fields)
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        name="checkout-backend",
        url="https://checkout.example/health",
        intervalSeconds=300,
    )
    component = await add_component(client, cast.alice, page["id"], monitor["id"], name="Checkout")
    now = clock.now()
    await ingest(app.state.engine, monitor["id"], now - timedelta(days=1), ok=True)
    await ingest(app.state.engine, monitor["id"], now - timedelta(minutes=5), ok=False)
    return {**page, "component": component}


async def test_the_page_is_complete_html_with_banner_components_bars_and_incident(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    await _page_with_an_incident(client, cast, app, clock, description="Our <b>shop</b>")
    response = await client.get("/s/shop")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    html = response.text
    assert '<html lang="en" data-theme="light">' in html
    assert "Major outage" in html  # the banner: its only component is down
    assert "Our &lt;b&gt;shop&lt;/b&gt;" in html  # the owner's text is text
    assert "Checkout" in html
    assert html.count('<rect class="day day-') == 90
    assert "Checkout is down" in html
    assert "checkout-backend" not in html
    assert "checkout.example" not in html
    assert "<script" not in html  # no script of ours, and none of the owner's set
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy


async def test_a_head_request_gets_the_pages_headers_and_no_body(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    await as_alice.page(slug="shop")
    page = await client.get("/s/shop")
    head = await client.head("/s/shop")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(page.content))
    assert head.headers["etag"] == page.headers["etag"]


async def test_the_owners_css_and_js_are_files_of_their_own_that_cannot_break_out(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    await as_alice.page(
        slug="shop",
        customCss=f"body {{ color: teal }} {EVIL}",
        customJs="document.body.dataset.custom = 'ran';",
    )
    page = await client.get("/s/shop")
    assert EVIL not in page.text
    assert "alert(" not in page.text
    assert '<link rel="stylesheet" href="/s/shop/custom.css?v=' in page.text
    assert '<script src="/s/shop/custom.js?v=' in page.text
    policy = page.headers["Content-Security-Policy"]
    assert "script-src http://upwatch.test/s/shop/custom.js;" in policy
    assert "sandbox allow-scripts" in policy
    css = await client.get("/s/shop/custom.css")
    assert css.headers["content-type"] == "text/css; charset=utf-8"
    assert css.headers["X-Content-Type-Options"] == "nosniff"
    assert css.text.endswith(EVIL)
    js = await client.get("/s/shop/custom.js")
    assert js.headers["content-type"] == "text/javascript; charset=utf-8"
    assert js.text == "document.body.dataset.custom = 'ran';"


async def test_the_api_docs_and_json_answers_carry_policies_that_admit_no_owner_script(
    client: httpx.AsyncClient,
) -> None:
    docs = await client.get("/docs")
    policy = docs.headers["Content-Security-Policy"]
    assert "script-src http://upwatch.test/docs/assets/ 'unsafe-inline'" in policy
    assert "/s/" not in policy
    health = await client.get("/healthz")
    assert health.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"


async def test_a_pages_custom_domain_shows_it_at_the_root_and_other_hosts_get_a_404(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    await as_alice.page(customDomain="status.shop.example")
    mine = await client.get("/", headers={"Host": "Status.Shop.Example:8443"})
    assert mine.status_code == 200
    assert "<h1>Shop status</h1>" in mine.text
    assert_problem(await client.get("/", headers={"Host": "other.example"}), 404)
    assert_problem(await client.get("/"), 404)


async def test_private_and_missing_pages_answer_404_on_every_visitor_address(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    page = await as_alice.page(isPublic=False, customDomain="status.shop.example")
    component_path = "/s/shop-status/components/" + "0" * 32 + "/uptime.svg"
    for path in (
        "/s/shop-status",
        "/s/shop-status/feed.rss",
        "/s/shop-status/feed.atom",
        "/s/shop-status/badge.svg",
        "/s/shop-status/custom.css",
        "/s/shop-status/custom.js",
        component_path,
        "/s/nothing",
    ):
        assert_problem(await client.get(path), 404)
    assert_problem(await client.get("/", headers={"Host": "status.shop.example"}), 404)
    assert page["isPublic"] is False


async def test_the_feeds_are_valid_rss_2_and_atom_1_with_each_incident_and_its_updates(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    await _page_with_an_incident(client, cast, app, clock)
    feeds = {}
    for kind, version in (("rss", "rss20"), ("atom", "atom10")):
        feed = await client.get(f"/s/shop/feed.{kind}")
        assert feed.headers["content-type"] == f"application/{kind}+xml; charset=utf-8"
        parsed = feedparser.parse(feed.content)
        assert not parsed.bozo, parsed.get("bozo_exception")
        assert parsed.version == version
        (entry,) = parsed.entries
        assert entry.title == "Checkout is down (investigating)"
        feeds[kind] = (feed, parsed, entry)
    _, _, item = feeds["rss"]
    assert item.link == "http://upwatch.test/s/shop#incident-" + item.id.split("-")[-1]
    assert "Checkout is not responding" in item.description
    _, atom, _ = feeds["atom"]
    assert atom.feed.title == "Shop status status"
    for feed in (feeds["rss"][0].text, feeds["atom"][0].text):
        assert "checkout-backend" not in feed
        assert "checkout.example" not in feed
        assert "late" not in feed  # the probe's error text


async def test_badges_are_well_formed_svg_saying_the_status_and_the_uptime(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, clock: ManualClock
) -> None:
    page = await _page_with_an_incident(client, cast, app, clock)
    badge = await client.get("/s/shop/badge.svg")
    assert badge.headers["content-type"] == "image/svg+xml"
    root = ElementTree.fromstring(badge.content)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == ["status", "major outage"]
    uptime = await client.get(f"/s/shop/components/{page['component']['id']}/uptime.svg")
    root = ElementTree.fromstring(uptime.content)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == ["uptime 90d", "50.00%"]


async def test_a_crafted_host_header_never_reaches_a_content_security_policy(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    await as_alice.page(
        slug="shop",
        customJs="document.body.dataset.custom = 'ran';",
        customDomain="status.shop.example",
    )
    crafted = "evil.test; script-src http://evil.test; sandbox allow-same-origin"
    for path, host in (
        ("/s/shop", crafted),
        ("/s/shop", "evil.test"),
        ("/", "status.shop.example:1 evil.test; sandbox allow-same-origin"),
        ("/", "status.shop.example:1;sandbox allow-same-origin"),
        ("/docs", crafted),
        ("/redoc", crafted),
    ):
        answer = await client.get(path, headers={"Host": host})
        assert answer.status_code == 200, (path, host)
        policy = answer.headers["Content-Security-Policy"]
        assert "evil" not in policy, (path, host)
        assert "allow-same-origin" not in policy, (path, host)
        assert ":1" not in policy, (path, host)
    page = await client.get("/s/shop", headers={"Host": crafted})
    assert (
        "script-src http://upwatch.test/s/shop/custom.js;"
        in page.headers["Content-Security-Policy"]
    )
    domain = await client.get("/", headers={"Host": "Status.Shop.Example:8443"})
    assert (
        "script-src http://status.shop.example/s/shop/custom.js;"
        in domain.headers["Content-Security-Policy"]
    )


async def test_the_api_docs_load_their_scripts_from_the_plain_host_they_were_opened_at(
    client: httpx.AsyncClient,
) -> None:
    """Opened at localhost while the public address says 127.0.0.1, the docs still run."""
    for host, origin in (
        ("localhost:8000", "http://localhost:8000"),
        ("[::1]:8000", "http://[::1]:8000"),
        ("localhost:8000/x", "http://upwatch.test"),
    ):
        answer = await client.get("/docs", headers={"Host": host})
        policy = answer.headers["Content-Security-Policy"]
        assert f"script-src {origin}/docs/assets/ " in policy, (host, policy)
