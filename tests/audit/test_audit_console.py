"""The audit log's console pages: the project's (its owner), the administrators' and the
visitor's own security events, with their filters and walls, without a script."""

from __future__ import annotations

import httpx

from tests.conftest import Account, Cast
from tests.console.forms import csrf_of, signed_in, submit
from tests.factories import PASSWORD


def other_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))


async def test_the_owner_reads_the_projects_log_from_the_project_page_and_filters_it(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await signed_in(client, cast.alice.email)
    project = await client.get(f"/app/projects/{cast.project_id}")
    path = f"/app/projects/{cast.project_id}/audit-log"
    assert f'href="{path}"' in project.text
    page = await client.get(path)
    assert page.status_code == 200
    assert "member.invited" in page.text
    assert "Member invited" in page.text
    assert cast.bob.email in page.text
    filtered = await client.get(path, params={"kind": "member.added"})
    assert '<code class="hint">member.added</code>' in filtered.text
    assert '<code class="hint">member.invited</code>' not in filtered.text
    refused = await client.get(path, params={"kind": "made.up"})
    assert refused.status_code == 422
    assert "not a kind of audit event" in refused.text
    bad_day = await client.get(path, params={"from": "yesterday"})
    assert bad_day.status_code == 422


async def test_a_member_gets_403_and_a_stranger_404_on_the_projects_log_page(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    path = f"/app/projects/{cast.project_id}/audit-log"
    async with other_client(client) as bob:
        await signed_in(bob, cast.bob.email)
        assert 'audit-log"' not in (await bob.get(f"/app/projects/{cast.project_id}")).text
        assert (await bob.get(path)).status_code == 403
    async with other_client(client) as charlie:
        await signed_in(charlie, cast.charlie.email)
        assert (await charlie.get(path)).status_code == 404
        assert (await charlie.get("/app/admin/audit-log")).status_code == 404


async def test_a_failed_sign_in_shows_on_the_victims_security_events_page(
    client: httpx.AsyncClient, alice: Account
) -> None:
    async with other_client(client) as stranger:
        form = await stranger.get("/app/login")
        refused = await submit(
            stranger, "/app/login", csrf_of(form), email=alice.email, password="wrong-guess"
        )
        assert refused.status_code == 401
    await signed_in(client, alice.email, PASSWORD)
    settings = await client.get("/app/settings")
    assert 'href="/app/settings/security-events"' in settings.text
    page = await client.get("/app/settings/security-events")
    assert "Sign-in failed" in page.text
    assert "sign_in.failed" in page.text
    assert "Signed in<br>" in page.text
    assert "wrong-guess" not in page.text


async def test_the_administrator_pages_through_every_event(
    client: httpx.AsyncClient, cast: Cast, admin: Account
) -> None:
    await signed_in(client, admin.email)
    assert 'href="/app/admin/audit-log"' in (await client.get("/app/admin")).text
    page = await client.get("/app/admin/audit-log")
    assert page.status_code == 200
    assert cast.project_id in page.text  # other tenants' events too
    later = await client.get("/app/admin/audit-log", params={"offset": "50", "kind": ""})
    assert later.status_code == 200
    assert "Newer" in later.text


async def test_a_day_at_the_end_of_the_calendar_is_no_fault_in_any_time_zone(
    client: httpx.AsyncClient, alice: Account
) -> None:
    # Days that exist in the visitor's zone but not in UTC (year 0 or 10000 once converted)
    # are refused as a filter, never a 500.
    changed = await client.put(
        "/users/settings", json={"timezone": "America/New_York"}, headers=alice.headers
    )
    assert changed.status_code == 200, changed.text
    await signed_in(client, alice.email, PASSWORD)
    late = await client.get("/app/settings/security-events", params={"to": "9999-12-31"})
    assert late.status_code in (200, 422)
    await client.put("/users/settings", json={"timezone": "Asia/Tokyo"}, headers=alice.headers)
    early = await client.get("/app/settings/security-events", params={"from": "0001-01-01"})
    assert early.status_code in (200, 422)
