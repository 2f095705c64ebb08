"""The dashboard, a monitor's and a project's reports (with their CSV) and a maintenance
window's edit, over HTTP as a browser would use them."""

from __future__ import annotations

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject
from tests.console.forms import signed_in, submit

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


async def test_a_monitor_report_shows_its_sla_and_statistics_and_downloads_them_as_csv(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await tcp_monitor(as_alice, "Checkout")
    await signed_in(client, cast.bob.email)
    report = await client.get(f"/app/monitors/{monitor}/report?period=7d&target=99.5")
    assert report.status_code == 200, report.text
    assert "Error budget" in report.text
    assert "Statistics over 7d" in report.text
    sla = await client.get(f"/app/monitors/{monitor}/report/sla.csv?target=99.5")
    assert sla.headers["content-type"].startswith("text/csv")
    api = await client.get(
        f"/monitors/{monitor}/sla?target=99.5&format=csv", headers=cast.bob.headers
    )
    assert sla.text == api.text
    stats = await client.get(f"/app/monitors/{monitor}/report/stats.csv?period=30d")
    assert stats.headers["content-type"].startswith("text/csv")
    assert stats.text.splitlines()[0].startswith("uptimePercentage,totalChecks")


async def test_a_report_of_a_bad_period_names_the_field_with_a_422(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await tcp_monitor(as_alice, "Checkout")
    await signed_in(client, cast.alice.email)
    bad = await client.get(f"/app/monitors/{monitor}/report?target=200")
    assert bad.status_code == 422
    assert 'id="e-target"' in bad.text
    backwards = await client.get(
        f"/app/projects/{cast.project_id}/sla?from=2026-03-02&to=2026-03-01"
    )
    assert backwards.status_code == 422
    assert 'id="e-to"' in backwards.text
    assert (
        await client.get(f"/app/projects/{cast.project_id}/sla.csv?target=0")
    ).status_code == 422


async def test_a_project_sla_page_shows_the_figures_and_its_csv_is_the_apis(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await tcp_monitor(as_alice, "Checkout")
    await signed_in(client, cast.alice.email)
    page = await client.get(f"/app/projects/{cast.project_id}/sla")
    assert page.status_code == 200
    assert "SLA of Shop" in page.text
    sheet = await client.get(f"/app/projects/{cast.project_id}/sla.csv")
    api = await client.get(
        f"/projects/{cast.project_id}/sla?format=csv", headers=cast.alice.headers
    )
    assert sheet.text == api.text


async def test_another_tenant_gets_404_for_a_monitor_or_project_report(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await tcp_monitor(as_alice, "Checkout")
    await signed_in(client, cast.charlie.email)
    for path in (
        f"/app/monitors/{monitor}/report",
        f"/app/monitors/{monitor}/report/sla.csv",
        f"/app/monitors/{monitor}/report/stats.csv",
        f"/app/projects/{cast.project_id}/sla",
        f"/app/projects/{cast.project_id}/sla.csv",
    ):
        assert (await client.get(path)).status_code == 404, path


async def planned_window(as_alice: InProject, monitor: str) -> str:
    made = await as_alice.post(
        "/maintenance-windows",
        title="Upgrade",
        startsAt="2030-01-05T10:00:00Z",
        endsAt="2030-01-05T12:00:00Z",
        timezone="Europe/Paris",
        monitorIds=[monitor],
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def test_a_maintenance_window_is_edited_with_the_fields_it_was_planned_with(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await tcp_monitor(as_alice, "Checkout")
    window = await planned_window(as_alice, monitor)
    csrf = await signed_in(client, cast.alice.email)
    edit = await client.get(f"/app/maintenance/{window}/edit")
    assert edit.status_code == 200
    assert 'value="2030-01-05T11:00"' in edit.text  # shown in the window's own zone
    assert 'value="Europe/Paris"' in edit.text
    backwards = await submit(
        client,
        f"/app/maintenance/{window}/edit",
        csrf,
        title="Upgrade",
        startsAt="2030-01-05T14:00",
        endsAt="2030-01-05T13:00",
        timezone="Europe/Paris",
    )
    assert backwards.status_code == 422
    assert "field-error" in backwards.text
    saved = await submit(
        client,
        f"/app/maintenance/{window}/edit",
        csrf,
        title="Bigger upgrade",
        startsAt="2030-01-05T13:00",
        endsAt="2030-01-05T15:00",
        timezone="Europe/Paris",
        rrule="FREQ=WEEKLY;BYDAY=SA",
    )
    assert saved.status_code == 303, saved.text
    got = (await client.get(f"/maintenance-windows/{window}", headers=cast.alice.headers)).json()
    assert got["title"] == "Bigger upgrade"
    assert got["startsAt"].startswith("2030-01-05T12:00:00")
    assert got["rrule"] == "FREQ=WEEKLY;BYDAY=SA"
    assert got["monitorIds"] is None  # none ticked: the whole project


async def test_another_tenant_gets_404_for_a_window_and_an_edit_without_csrf_403(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await tcp_monitor(as_alice, "Checkout")
    window = await planned_window(as_alice, monitor)
    csrf = await signed_in(client, cast.charlie.email)
    assert (await client.get(f"/app/maintenance/{window}/edit")).status_code == 404
    other = await submit(client, f"/app/maintenance/{window}/edit", csrf, title="Mine")
    assert other.status_code == 404
    client.cookies.clear()
    await signed_in(client, cast.alice.email)
    forged = await client.post(f"/app/maintenance/{window}/edit", data={"title": "Forged"})
    assert forged.status_code == 403
