"""Maintenance as a status page shows it: components under maintenance, the banner, and what
is scheduled in the next 14 days."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject
from tests.factories import add_component
from tests.maintenance.test_windows import iso, make_window
from upwatch.kit.clock import ManualClock

settings_overrides = overriding(status_page_max_age_seconds=0, allow_private_targets=True)


async def test_a_page_shows_maintenance_on_now_and_soon_but_not_next_month(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, as_alice: InProject
) -> None:
    api = await as_alice.monitor(name="API", url="http://127.0.0.1:9/a", intervalSeconds=300)
    web = await as_alice.monitor(name="Web", url="http://127.0.0.1:9/w", intervalSeconds=300)
    page = await as_alice.page(slug="shop")
    api_part = await add_component(client, cast.alice, page["id"], api["id"])
    web_part = await add_component(client, cast.alice, page["id"], web["id"])
    now = clock.now()
    await make_window(client, cast, clock, title="API upgrade", monitorIds=[api["id"]])
    soon, next_month = now + timedelta(days=2), now + timedelta(days=30)
    await make_window(
        client, cast, clock, title="Weekly backups", rrule="FREQ=WEEKLY",
        startsAt=iso(soon), endsAt=iso(soon + timedelta(hours=1)),
    )  # fmt: skip
    await make_window(
        client, cast, clock, title="Data centre move",
        startsAt=iso(next_month), endsAt=iso(next_month + timedelta(hours=4)),
    )  # fmt: skip

    public = (await client.get("/status-pages/public/slug/shop")).json()
    assert public["overallStatus"] == "maintenance"
    statuses = {c["id"]: c["status"] for c in public["components"]}
    assert statuses[api_part["id"]] == "maintenance"
    assert statuses[web_part["id"]] != "maintenance"
    shown = [(m["title"], m["active"], m["componentIds"]) for m in public["maintenance"]]
    assert shown == [
        ("API upgrade", True, [api_part["id"]]),
        ("Weekly backups", False, [api_part["id"], web_part["id"]]),
    ]
    html = await client.get("/s/shop")
    assert html.status_code == 200, html.text
    assert "Scheduled maintenance" in html.text
    assert "Weekly backups" in html.text
    assert "Data centre move" not in html.text

    # After the hour, the API is back to what its checks say, and the backups come next.
    clock.advance(timedelta(hours=2))
    later = (await client.get("/status-pages/public/slug/shop")).json()
    assert later["overallStatus"] != "maintenance"
    assert [m["title"] for m in later["maintenance"]] == ["Weekly backups"]
