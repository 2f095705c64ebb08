"""The incident pages over HTTP: opening an incident from the list, the list's filter (kept by
its live refresh), changing status, severity and description, the alerts with their
deliveries, deleting after a confirmation; errors next to their fields, the tenant wall, the
CSRF token."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, InProject
from tests.console.forms import csrf_of, signed_in, submit
from upwatch.models import Alert, AlertAttempt
from upwatch.runtime import Runtime

settings_overrides = overriding(allow_private_targets=True)


async def _api(client: httpx.AsyncClient, cast: Cast, path: str) -> httpx.Response:
    """The incident behind a console path, as Alice reads it through the API."""
    return await client.get(f"/incidents/{path.rsplit('/', 1)[1]}", headers=cast.alice.headers)


async def _opened(client: httpx.AsyncClient, csrf: str, project_id: str, **fields: str) -> str:
    """An incident opened through the console's form; its page's path."""
    body = {"projectId": project_id, "title": "Checkout is slow", **fields}
    made = await submit(client, "/app/incidents", csrf, **body)
    assert made.status_code == 303, made.text
    return str(made.headers["location"])


async def test_a_member_opens_an_incident_from_the_list_with_a_monitor_and_a_severity(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(
        name="Checkout", type="tcp", host="127.0.0.1", port=9, intervalSeconds=300, url=None
    )
    csrf = await signed_in(client, cast.bob.email)
    assert 'href="/app/incidents/new"' in (await client.get("/app/incidents")).text
    form = await client.get("/app/incidents/new")
    assert form.status_code == 200
    assert 'for="f-monitorId"' in form.text
    path = await _opened(
        client,
        csrf,
        cast.project_id,
        title="Payments fail",
        description="Card payments time out",
        status="identified",
        severity="critical",
        monitorId=monitor["id"],
    )
    page = await client.get(path)
    assert "Incident Payments fail opened." in page.text
    assert "Card payments time out" in page.text
    incident = (await _api(client, cast, path)).json()
    assert (incident["status"], incident["severity"]) == ("identified", "critical")
    assert incident["monitorId"] == monitor["id"]
    listed = (await client.get("/app/incidents")).text
    assert "Shop" in listed
    assert ">Checkout</a>" in listed


async def test_a_new_incident_without_a_title_or_with_another_projects_monitor_is_refused(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    empty = await submit(client, "/app/incidents", csrf, projectId=cast.project_id, title="")
    assert empty.status_code == 422
    assert 'id="e-title"' in empty.text
    alien = await submit(
        client, "/app/incidents", csrf, projectId=cast.project_id, title="x", monitorId="nope"
    )
    assert alien.status_code == 422
    assert 'id="e-monitorId"' in alien.text
    assert "no such monitor" in alien.text


async def test_the_list_filters_by_project_status_and_severity_and_its_refresh_keeps_it(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    await _opened(client, csrf, cast.project_id, title="Slow search", severity="low")
    await _opened(
        client, csrf, cast.project_id, title="Down hard", severity="critical", status="monitoring"
    )
    query = {"project": cast.project_id, "severity": "critical"}
    page = await client.get("/app/incidents", params=query)
    assert "Down hard" in page.text
    assert "Slow search" not in page.text
    refresh = f'data-refresh="/app/incidents/rows?project={cast.project_id}&amp;severity=critical"'
    assert refresh in page.text
    rows = await client.get("/app/incidents/rows", params=query)
    assert "Down hard" in rows.text
    assert "Slow search" not in rows.text
    by_status = await client.get("/app/incidents", params={"status": "investigating"})
    assert "Slow search" in by_status.text
    assert "Down hard" not in by_status.text
    odd = await client.get("/app/incidents", params={"status": "gone", "severity": "huge"})
    assert odd.status_code == 200
    assert "Down hard" in odd.text


async def test_status_severity_and_description_change_through_the_seed_states(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.bob.email)
    path = await _opened(client, csrf, cast.project_id)
    for status in ("identified", "monitoring", "resolved", "investigating"):
        saved = await submit(
            client, f"{path}/edit", csrf, status=status, severity="high", description="Cache"
        )
        assert saved.status_code == 303, saved.text
        state = (await _api(client, cast, path)).json()
        assert (state["status"], state["severity"], state["description"]) == (
            status,
            "high",
            "Cache",
        )
    timeline = (await client.get(path)).text
    assert "Status changed to monitoring." in timeline
    assert "Incident saved." in timeline
    bad = await submit(client, f"{path}/edit", csrf, status="gone", severity="high")
    assert bad.status_code == 422
    assert 'id="e-status"' in bad.text


async def _alerted(runtime: Runtime, cast: Cast, incident_id: str) -> None:
    """An alert to a webhook provider, delivered on its second attempt."""
    now = datetime.now(UTC)
    async with runtime.db.sessionmaker() as session:
        alert = Alert(
            provider_type="webhook",
            provider_name="Ops hook",
            project_id=cast.project_id,
            incident_id=incident_id,
            event="incident.opened",
            facts={},
            status="sent",
            attempts=2,
            next_attempt_at=now,
            sent_at=now,
            created_at=now,
        )
        session.add(alert)
        await session.flush()
        for attempt, outcome, error in ((1, "retry", "HTTP 503"), (2, "sent", None)):
            session.add(
                AlertAttempt(
                    alert_id=alert.id,
                    attempt=attempt,
                    outcome=outcome,
                    error=error,
                    duration_ms=12.0,
                    attempted_at=now,
                )
            )
        await session.commit()


async def test_an_incidents_page_lists_its_alerts_with_every_delivery_attempt(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    path = await _opened(client, csrf, cast.project_id)
    assert "No alerts were sent" in (await client.get(path)).text
    await _alerted(runtime, cast, path.rsplit("/", 1)[1])
    page = (await client.get(path)).text
    assert "<caption>Alerts and their deliveries</caption>" in page
    assert "Ops hook" in page
    assert "retry at" in page
    assert "HTTP 503" in page


async def test_an_incident_is_deleted_after_a_confirmation_page(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.bob.email)
    path = await _opened(client, csrf, cast.project_id, title="Gone soon")
    confirm = await client.get(f"{path}/delete")
    assert confirm.status_code == 200
    assert "Delete Gone soon?" in confirm.text
    assert f'href="{path}"' in confirm.text  # Cancel
    deleted = await submit(client, f"{path}/delete", csrf_of(confirm))
    assert deleted.status_code == 303
    assert deleted.headers["location"] == "/app/incidents"
    assert "Incident deleted." in (await client.get("/app/incidents")).text
    assert (await client.get(path)).status_code == 404
    assert (await _api(client, cast, path)).status_code == 404


async def test_charlie_gets_the_not_found_page_for_every_incident_page_of_alices(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    path = await _opened(client, csrf, cast.project_id, title="Private trouble")
    client.cookies.clear()
    csrf = await signed_in(client, cast.charlie.email)
    assert "Private trouble" not in (await client.get("/app/incidents")).text
    for page in (path, f"{path}/delete"):
        assert (await client.get(page)).status_code == 404
    for action, fields in (
        ("edit", {"status": "resolved", "severity": "low"}),
        ("delete", {}),
        ("updates", {"message": "hi"}),
    ):
        assert (await submit(client, f"{path}/{action}", csrf, **fields)).status_code == 404
    alien = await submit(client, "/app/incidents", csrf, projectId=cast.project_id, title="x")
    assert alien.status_code == 404


async def test_changing_opening_or_deleting_an_incident_without_the_csrf_token_is_refused(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    path = await _opened(client, csrf, cast.project_id)
    for action, fields in (
        (path + "/edit", {"status": "resolved", "severity": "low"}),
        (path + "/delete", {}),
        ("/app/incidents", {"projectId": cast.project_id, "title": "x"}),
    ):
        refused = await client.post(action, data=fields)
        assert refused.status_code == 403, action
    assert (await client.get(path)).status_code == 200


async def test_an_incident_is_placed_on_a_status_page_or_its_components_from_its_forms(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    status_page = await as_alice.page(slug="shop", name="Shop status")
    monitor = await as_alice.monitor(
        name="Checkout", type="tcp", host="127.0.0.1", port=9, intervalSeconds=300, url=None
    )
    component = await client.post(
        f"/status-pages/{status_page['id']}/components",
        headers=cast.alice.headers,
        json={"monitorId": monitor["id"], "name": "Checkout"},
    )
    component_id = component.json()["id"]
    csrf = await signed_in(client, cast.bob.email)
    form = await client.get("/app/incidents/new")
    assert f'name="statusPageIds" value="{status_page["id"]}"' in form.text
    assert f'name="componentIds" value="{component_id}"' in form.text
    made = await client.post(
        "/app/incidents",
        data={
            "csrf": csrf,
            "projectId": cast.project_id,
            "title": "Database maintenance overrun",
            "severity": "high",
            "statusPageIds": status_page["id"],
        },
    )
    assert made.status_code == 303, made.text
    path = str(made.headers["location"])
    assert (await _api(client, cast, path)).json()["statusPageIds"] == [status_page["id"]]
    page = await client.get(path)
    assert f'name="statusPageIds" value="{status_page["id"]}" checked' in page.text

    # The change form places it on the component instead.
    changed = await client.post(
        f"{path}/edit",
        data={
            "csrf": csrf,
            "status": "identified",
            "severity": "high",
            "description": "",
            "componentIds": [component_id],
        },
    )
    assert changed.status_code == 303, changed.text
    incident = (await _api(client, cast, path)).json()
    assert (incident["statusPageIds"], incident["componentIds"]) == ([], [component_id])
    public = (await client.get("/status-pages/public/slug/shop")).json()
    assert public["incidents"][0]["componentIds"] == [component_id]

    # A page of another project is refused next to the field.
    refused = await client.post(
        f"{path}/edit",
        data={"csrf": csrf, "status": "identified", "severity": "high", "statusPageIds": "nope"},
    )
    assert refused.status_code == 422
    assert "no such status page in the incident&#39;s project" in refused.text
