"""Failure evidence end to end: a real failing check keeps what it saw; the team finds it on
the check's result, the incident it opened (API and console) and the webhook alert, redacted;
the public status page never shows it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from tests.app_settings import QUICK_ALERTS, overriding
from tests.conftest import Cast, InProject, eventually
from tests.console.forms import signed_in
from tests.factories import add_component
from tests.receivers import Receiver
from upwatch.kit.clock import Clock
from upwatch.probes.evidence import MASK

MARKER = "evidence-marker-5b1e9c"
API_KEY = "key-that-must-stay-secret-31"
COOKIE = "cookie-that-must-stay-secret-77"


@pytest.fixture
def clock() -> Clock:
    return Clock()  # alert delivery runs on real time


settings_overrides = overriding(
    QUICK_ALERTS, allow_private_targets=True, status_page_max_age_seconds=0
)


@pytest.fixture
async def failing_site() -> AsyncIterator[str]:
    """Answers 503 with a marked body that echoes the request's key, and sets a cookie."""

    async def down(request: web.Request) -> web.Response:
        echoed = request.headers.get("X-Api-Key", "")
        response = web.Response(status=503, text=f"<h1>{MARKER}</h1> <b>key</b> {echoed}")
        response.headers["Set-Cookie"] = f"session={COOKIE}"
        response.headers["X-Served-By"] = "edge-3"
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", down)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/health"
    await runner.cleanup()


async def test_a_failing_check_shows_its_evidence_to_the_team_and_never_on_the_status_page(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    receiver: Receiver,
    failing_site: str,
) -> None:
    headers = cast.alice.headers
    await as_alice.provider(type="webhook", name="Ops hook", config={"url": receiver.url("/a")})
    monitor = await as_alice.monitor(
        name="Checkout",
        type="http",
        url=failing_site,
        headers={"X-Api-Key": API_KEY},
        secretHeaders=["X-Api-Key"],
        retries=0,
        intervalSeconds=300,
    )
    page = await as_alice.page(slug="shop")
    await add_component(client, cast.alice, page["id"], monitor["id"], name="Shop")

    checked = await client.post(f"/monitors/{monitor['id']}/check", headers=headers)
    assert checked.status_code == 200, checked.text
    result = checked.json()
    assert result["status"] == "down"
    seen = result["evidence"]
    assert seen["phase"] == "first_byte"
    assert seen["statusLine"] == "HTTP/1.1 503 Service Unavailable"
    assert seen["addresses"] == ["127.0.0.1"]
    assert ["Set-Cookie", MASK] in seen["headers"]
    assert ["X-Served-By", "edge-3"] in seen["headers"]
    assert seen["body"] == f"<h1>{MARKER}</h1> <b>key</b> {MASK}"

    async def incident_opened() -> bool:
        found = await client.get("/incidents", headers=headers, params={"monitorId": monitor["id"]})
        return len(found.json()) == 1

    await eventually(incident_opened)
    (listed,) = (
        await client.get("/incidents", headers=headers, params={"monitorId": monitor["id"]})
    ).json()
    incident = (await client.get(f"/incidents/{listed['id']}", headers=headers)).json()
    assert incident["evidence"]["statusLine"] == "HTTP/1.1 503 Service Unavailable"
    assert MARKER in incident["evidence"]["body"]
    assert listed["evidence"] == incident["evidence"]

    await eventually(lambda: len(receiver.to("/a")) >= 1)
    alert = receiver.to("/a")[0].json()
    assert alert["event"] == "incident.opened"
    assert alert["failure"]["evidence"]["statusLine"] == "HTTP/1.1 503 Service Unavailable"
    assert MARKER in alert["failure"]["evidence"]["body"]

    await signed_in(client, cast.bob.email)
    console = await client.get(f"/app/incidents/{listed['id']}")
    assert console.status_code == 200
    assert '<details class="evidence">' in console.text
    assert "HTTP/1.1 503 Service Unavailable" in console.text
    # Escaped: the target's markup is shown, never rendered.
    assert f"&lt;h1&gt;{MARKER}&lt;/h1&gt;" in console.text
    assert f"<h1>{MARKER}" not in console.text
    client.cookies.clear()

    for secret in (API_KEY, COOKIE):
        assert secret not in checked.text
        assert secret not in json.dumps(incident)
        assert secret not in receiver.to("/a")[0].body.decode()
        assert secret not in console.text

    public_json = await client.get("/status-pages/public/slug/shop")
    public_html = await client.get("/s/shop")
    assert public_json.status_code == public_html.status_code == 200
    assert "Shop" in public_html.text
    for shown in (public_json.text, public_html.text):
        assert MARKER not in shown
        assert "503 Service Unavailable" not in shown
        assert "edge-3" not in shown
