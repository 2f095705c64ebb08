"""The dashboard, a monitor's and a project's reports (with their CSV) and a maintenance
window's edit, over HTTP as a browser would use them."""

from __future__ import annotations

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject
from tests.console.forms import signed_in

settings_overrides = overriding(allow_private_targets=True)


async def tcp_monitor(as_alice: InProject, name: str) -> str:
    monitor = await as_alice.monitor(
        name=name, type="tcp", host="127.0.0.1", port=9, intervalSeconds=300, url=None
    )
    return str(monitor["id"])


async def test_signing_in_lands_on_the_dashboard_with_monitors_counts_and_open_incidents(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await tcp_monitor(as_alice, "Checkout")
    opened = await as_alice.post("/incidents", monitorId=monitor, title="Checkout down")
    assert opened.status_code == 201, opened.text
    await signed_in(client, cast.bob.email)
    assert (await client.get("/app")).headers["location"] == "/app/dashboard"
    board = await client.get("/app/dashboard")
    assert board.status_code == 200
    assert "Checkout" in board.text
    assert "<strong>1</strong> open incident<" in board.text
    assert "<strong>1</strong> monitors" in board.text


async def test_the_dashboard_of_another_tenant_shows_none_of_the_projects_monitors(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await tcp_monitor(as_alice, "Checkout")
    await signed_in(client, cast.charlie.email)
    board = await client.get("/app/dashboard")
    assert board.status_code == 200
    assert "Checkout" not in board.text
    assert "No monitors yet." in board.text
