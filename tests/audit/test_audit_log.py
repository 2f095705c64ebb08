"""The audit log over HTTP: each recorded kind with who, where and what; the three views and
their walls; filters and pages; no secret in any of it; retention by plan."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests.app_settings import overriding
from tests.conftest import Account, Cast, Mailbox, assert_problem
from tests.factories import Target, create_monitor, create_provider, log_in, reset_password
from upwatch.kit.clock import ManualClock
from upwatch.models import User
from upwatch.retention.job import RetentionJob
from upwatch.runtime import Runtime

AGENT = "audit-test/1.0 (Chromium-free)"
ADDRESS = "203.0.113.7"  # the test client's (tests/conftest.py)
NEW_PASSWORD = "a-new-long-passphrase"
HOOK = "https://hooks.slack.com/services/T000/B000/HOOKTOKENONE"
OTHER_HOOK = "https://hooks.slack.com/services/T000/B000/HOOKTOKENTWO"
MONITOR_SECRET = "Bearer monitor-token-4711"
OTHER_MONITOR_SECRET = "Bearer monitor-token-4712"

# The monitor of the secret test checks the test's own local server.
settings_overrides = overriding(allow_private_targets=True)


async def signed_in_now(runtime: Runtime, account: Account) -> Account:
    """``account`` with an access token of the clock's now (after the clock moved on), issued
    directly so that no sign-in event is added."""
    async with runtime.db.readsession() as session:
        user = await session.get(User, account.id)
        assert user is not None
        token = runtime.tokens.issue(user.id, user.token_version, runtime.clock.now())
    return replace(account, access_token=token)


def retention_job(runtime: Runtime) -> RetentionJob:
    return RetentionJob(
        runtime.settings,
        runtime.db,
        runtime.clock,
        runtime.metrics,
        runtime.mailer,
        runtime.catalog,
    )


@pytest.fixture(autouse=True)
def user_agent(client: httpx.AsyncClient) -> None:
    client.headers["User-Agent"] = AGENT


async def project_log(client: httpx.AsyncClient, cast: Cast, **params: Any) -> list[dict[str, Any]]:
    response = await client.get(
        f"/projects/{cast.project_id}/audit-log", headers=cast.alice.headers, params=params
    )
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()
    return events


async def own_events(
    client: httpx.AsyncClient, account: Account, **params: Any
) -> list[dict[str, Any]]:
    response = await client.get("/users/me/security-events", headers=account.headers, params=params)
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()
    return events


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


def assert_from_the_request(event: dict[str, Any]) -> None:
    assert event["address"] == ADDRESS
    assert event["userAgent"] == AGENT


async def test_membership_events_name_the_actor_the_member_and_the_request(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    events = await project_log(client, cast)
    invited = of_kind(events, "member.invited")[0]
    assert invited["actor"] == {"id": cast.alice.id, "label": cast.alice.email}
    assert invited["projectId"] == cast.project_id
    assert invited["target"]["label"] == cast.bob.email
    assert_from_the_request(invited)
    added = of_kind(events, "member.added")[0]
    assert added["actor"]["id"] == cast.bob.id  # he joined with the mailed token
    assert added["target"] == {"type": "member", "id": cast.bob.id, "label": cast.bob.email}
    assert added["via"] == "invitation"

    removed = await client.delete(
        f"/projects/{cast.project_id}/users/{cast.bob.id}", headers=cast.alice.headers
    )
    assert removed.status_code == 200, removed.text
    event = of_kind(await project_log(client, cast), "member.removed")[0]
    assert (event["actor"]["id"], event["target"]["id"]) == (cast.alice.id, cast.bob.id)
    # Bob sees his membership's end among his own events.
    assert of_kind(await own_events(client, cast.bob), "member.removed")


async def test_sign_ins_appear_in_the_persons_security_events_failed_ones_too(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await log_in(client, alice.email)).status_code == 200
    refused = await log_in(client, alice.email, "not-her-password")
    assert_problem(refused, 401)
    assert_problem(await log_in(client, "nobody@example.com", "whatever1"), 401)

    events = await own_events(client, alice)
    failed = of_kind(events, "sign_in.failed")
    assert len(failed) == 1  # the stranger's attempt is not hers
    assert failed[0]["actor"] == {"id": None, "label": ""}
    assert failed[0]["accountId"] == alice.id
    assert failed[0]["target"]["label"] == alice.email
    assert_from_the_request(failed[0])
    succeeded = of_kind(events, "sign_in.succeeded")[0]
    assert succeeded["actor"]["id"] == alice.id
    assert succeeded["via"] == "password"
    assert_from_the_request(succeeded)
    assert "not-her-password" not in json.dumps(events)


async def test_password_change_and_reset_are_recorded_without_the_passwords(
    client: httpx.AsyncClient, alice: Account, mailbox: Mailbox, clock: ManualClock
) -> None:
    changed = await client.put("/users/me", headers=alice.headers, json={"password": NEW_PASSWORD})
    assert changed.status_code == 200, changed.text
    clock.advance(timedelta(minutes=1))
    await client.post("/auth/forgot-password", json={"email": alice.email})
    await mailbox.wait_for(alice.email)
    reset = await reset_password(client, mailbox.reset_token(alice.email), "yet-another-one")
    assert reset.status_code == 200, reset.text
    signed_in = await log_in(client, alice.email, "yet-another-one")
    headers = {"Authorization": f"Bearer {signed_in.json()['access_token']}"}
    response = await client.get("/users/me/security-events", headers=headers)
    events = response.json()
    changes = [e["kind"] for e in events if e["kind"].startswith("password.")]
    assert changes == ["password.reset", "password.changed"]
    assert of_kind(events, "password.changed")[0]["actor"]["id"] == alice.id
    assert of_kind(events, "password.reset")[0]["via"] == "reset_link"
    text = response.text
    assert NEW_PASSWORD not in text
    assert "yet-another-one" not in text
    assert mailbox.reset_token(alice.email) not in text


async def test_api_keys_are_named_by_prefix_and_never_shown(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    assert made.status_code == 201, made.text
    key = made.json()
    revoked = await client.delete(
        f"/projects/{cast.project_id}/api-keys/{key['id']}", headers=cast.alice.headers
    )
    assert revoked.status_code == 200, revoked.text
    events = await project_log(client, cast)
    for kind in ("api_key.created", "api_key.revoked"):
        event = of_kind(events, kind)[0]
        assert event["target"] == {"type": "api_key", "id": key["id"], "label": key["prefix"]}
        assert_from_the_request(event)
    assert key["key"] not in json.dumps(events)


async def test_an_api_key_cannot_read_the_audit_log(client: httpx.AsyncClient, cast: Cast) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    assert_problem(await client.get(f"/projects/{cast.project_id}/audit-log", headers=key), 403)
    assert_problem(await client.get("/users/me/security-events", headers=key), 403)


async def test_secret_changes_of_providers_and_monitors_name_fields_never_values(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    provider = await create_provider(
        client,
        cast.bob.headers,
        cast.project_id,
        type="slack",
        name="Ops",
        config={"webhookUrl": HOOK},
    )
    renamed = await client.patch(
        f"/notification-providers/{provider['id']}",
        headers=cast.bob.headers,
        json={"name": "Ops room"},
    )
    assert renamed.status_code == 200, renamed.text
    moved = await client.patch(
        f"/notification-providers/{provider['id']}",
        headers=cast.bob.headers,
        json={"config": {"webhookUrl": OTHER_HOOK}},
    )
    assert moved.status_code == 200, moved.text

    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        url=target.url,
        intervalSeconds=3600,
        headers={"Authorization": MONITOR_SECRET, "Accept": "text/html"},
    )
    headers = {"Authorization": OTHER_MONITOR_SECRET, "Accept": "text/html"}
    for change in ({"name": "Shop front"}, {"headers": headers}):
        patched = await client.patch(
            f"/monitors/{monitor['id']}", headers=cast.bob.headers, json=change
        )
        assert patched.status_code == 200, patched.text

    response = await client.get(
        f"/projects/{cast.project_id}/audit-log", headers=cast.alice.headers
    )
    events = response.json()
    (provider_event,) = of_kind(events, "provider.secret_changed")  # not for the rename
    assert provider_event["actor"]["id"] == cast.bob.id
    assert provider_event["target"]["id"] == provider["id"]
    assert provider_event["details"] == {"fields": "config.webhookUrl", "type": "slack"}
    assert_from_the_request(provider_event)
    (monitor_event,) = of_kind(events, "monitor.secret_changed")
    assert monitor_event["target"] == {
        "type": "monitor",
        "id": monitor["id"],
        "label": "Shop front",
    }
    assert monitor_event["details"] == {"fields": "headers.Authorization"}
    for secret in ("HOOKTOKENONE", "HOOKTOKENTWO", "monitor-token-4711", "monitor-token-4712"):
        assert secret not in response.text


async def test_a_deleted_projects_trail_outlives_it(
    client: httpx.AsyncClient, cast: Cast, admin: Account, clock: ManualClock
) -> None:
    clock.advance(timedelta(seconds=1))
    deleted = await client.delete(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert deleted.status_code == 200, deleted.text
    response = await client.get(
        "/admin/audit-log", headers=admin.headers, params={"projectId": cast.project_id}
    )
    assert response.status_code == 200, response.text
    kinds = [e["kind"] for e in response.json()]
    assert kinds[0] == "project.deleted"
    assert {"member.invited", "member.added"} <= set(kinds)
    event = response.json()[0]
    assert event["target"] == {"type": "project", "id": cast.project_id, "label": "Shop"}
    assert event["actor"]["id"] == cast.alice.id
    # The project is gone, so its own route answers 404 now.
    gone = await client.get(f"/projects/{cast.project_id}/audit-log", headers=cast.alice.headers)
    assert_problem(gone, 404)


async def test_administrator_actions_are_recorded_and_the_admin_sees_every_event(
    client: httpx.AsyncClient, cast: Cast, admin: Account
) -> None:
    changed = await client.patch(
        f"/admin/users/{cast.charlie.id}",
        headers=admin.headers,
        json={"roles": ["user", "project_manager"], "plan": "pro"},
    )
    assert changed.status_code == 200, changed.text
    region = await client.post(
        "/regions", headers=admin.headers, json={"code": "eu-north", "name": "Stockholm"}
    )
    assert region.status_code == 201, region.text
    response = await client.get("/admin/audit-log", headers=admin.headers)
    assert response.status_code == 200, response.text
    events = response.json()
    actions = of_kind(events, "admin.action")
    assert sorted(a["details"]["action"] for a in actions) == ["create_region", "update_user"]
    (user_change,) = [a for a in actions if a["details"]["action"] == "update_user"]
    assert user_change["target"] == {
        "type": "account",
        "id": cast.charlie.id,
        "label": cast.charlie.email,
    }
    assert user_change["details"]["rolesFrom"] == "user"
    assert user_change["details"]["rolesTo"] == "user,project_manager"
    assert user_change["details"]["plan"] == "pro"
    assert_from_the_request(user_change)
    # Every project's events, not only the administrator's own.
    assert of_kind(events, "member.added")[0]["projectId"] == cast.project_id
    # Charlie sees what was done to his account.
    assert of_kind(await own_events(client, cast.charlie), "admin.action")
    only_charlie = await client.get(
        "/admin/audit-log", headers=admin.headers, params={"accountId": cast.charlie.id}
    )
    assert {e["accountId"] for e in only_charlie.json()} == {cast.charlie.id}


async def test_tenant_walls_hold_on_every_view(client: httpx.AsyncClient, cast: Cast) -> None:
    path = f"/projects/{cast.project_id}/audit-log"
    assert_problem(await client.get(path, headers=cast.charlie.headers), 404)
    assert_problem(await client.get(path, headers=cast.bob.headers), 403)
    assert_problem(
        await client.get("/projects/" + "0" * 32 + "/audit-log", headers=cast.alice.headers), 404
    )
    for someone in (cast.alice, cast.bob, cast.charlie):
        assert_problem(await client.get("/admin/audit-log", headers=someone.headers), 403)
    assert_problem(await client.get(path), 401)
    assert_problem(await client.get("/users/me/security-events"), 401)
    # Charlie's own events hold nothing of Alice's project.
    assert all(e["projectId"] is None for e in await own_events(client, cast.charlie))


async def test_lists_filter_by_kind_and_time_and_come_in_pages(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock, runtime: Runtime
) -> None:
    start = clock.now()
    for _ in range(3):
        clock.advance(timedelta(minutes=10))
        await log_in(client, cast.alice.email)
    later = clock.now()
    alice = await signed_in_now(runtime, cast.alice)
    events = await own_events(client, alice, kind="sign_in.succeeded")
    assert len(events) == 3
    assert [e["occurredAt"] for e in events] == sorted(
        (e["occurredAt"] for e in events), reverse=True
    )
    response = await client.get(
        "/users/me/security-events",
        headers=alice.headers,
        params={"kind": "sign_in.succeeded", "limit": 2, "offset": 1},
    )
    assert response.headers["X-Total-Count"] == "3"
    assert [e["id"] for e in response.json()] == [e["id"] for e in events[1:3]]
    window = await own_events(
        client,
        alice,
        **{"from": (start + timedelta(minutes=15)).isoformat(), "to": later.isoformat()},
    )
    assert [e["kind"] for e in window] == ["sign_in.succeeded", "sign_in.succeeded"]
    kinds = await client.get(
        f"/projects/{cast.project_id}/audit-log",
        headers=alice.headers,
        params={"kind": "member.invited"},
    )
    assert [e["kind"] for e in kinds.json()] == ["member.invited"]


@pytest.mark.parametrize(
    "params",
    [
        {"kind": "made.up"},
        {"from": "2026-11-30T00:00:00Z", "to": "2026-11-29T00:00:00Z"},
        {"from": "yesterday"},
        {"limit": 0},
    ],
)
async def test_a_bad_filter_is_a_422(
    client: httpx.AsyncClient, alice: Account, params: dict[str, Any]
) -> None:
    response = await client.get("/users/me/security-events", headers=alice.headers, params=params)
    assert_problem(response, 422)


async def test_old_events_are_purged_by_the_plan_of_whom_they_belong_to(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, clock: ManualClock, admin: Account
) -> None:
    await log_in(client, "nobody@example.com", "whatever1")  # nobody's event
    days = runtime.catalog.get(runtime.catalog.default_plan).retentionDays
    clock.advance(timedelta(days=days - 1))
    await log_in(client, cast.alice.email)  # recent: stays
    await retention_job(runtime).run_once()
    alice, bob = [await signed_in_now(runtime, a) for a in (cast.alice, cast.bob)]
    assert len(await project_log(client, replace(cast, alice=alice))) == 2  # not old enough
    clock.advance(timedelta(days=2))
    await retention_job(runtime).run_once()
    alice, bob = [await signed_in_now(runtime, a) for a in (cast.alice, cast.bob)]
    assert await project_log(client, replace(cast, alice=alice)) == []
    assert [e["kind"] for e in await own_events(client, alice)] == ["sign_in.succeeded"]
    assert await own_events(client, bob) == []
    everything = await client.get(
        "/admin/audit-log", headers=(await signed_in_now(runtime, admin)).headers
    )
    assert [e["target"]["label"] for e in everything.json()] == [cast.alice.email]
