"""A project can require two-factor (issue 37): the owner's setting; a member without a second
factor gets 403 ``mfa-required-by-project`` on everything in the project until enrolled; an API
key of the project is unaffected; to anyone outside the project it stays a 404.

A second factor is given here straight through the database: TOTP as ``users.totp_enabled_at``
set (what confirming an enrolment stores), a passkey as a ``PasskeyCredential`` row; the
enrolment routes have tests of their own."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.app_settings import overriding
from tests.conftest import Account, Cast, Mailbox, SignUp, assert_problem
from tests.factories import create_incident, create_monitor
from upwatch.audit.kinds import PROJECT_TWO_FACTOR_CHANGED
from upwatch.models import AuditEvent, PasskeyCredential, User
from upwatch.runtime import Runtime

settings_overrides = overriding(allow_private_targets=True)
TARGET = {"type": "http", "url": "http://127.0.0.1:9/", "intervalSeconds": 300}
REFUSED = "https://upwatch.dev/problems/mfa-required-by-project"


async def turn_on_totp(runtime: Runtime, account: Account) -> None:
    async with runtime.db.sessionmaker() as session:
        user = await session.get(User, account.id)
        assert user is not None
        user.totp_enabled_at = datetime.now(UTC)
        await session.commit()


async def add_passkey(runtime: Runtime, account: Account) -> None:
    async with runtime.db.sessionmaker() as session:
        session.add(
            PasskeyCredential(
                user_id=account.id,
                credential_id=f"cred-{account.id}",
                public_key=b"\x01" * 77,
                sign_count=0,
                transports=["internal"],
                name="Laptop",
                created_at=datetime.now(UTC),
            )
        )
        await session.commit()


async def require(
    client: httpx.AsyncClient, account: Account, project_id: str, on: bool = True
) -> httpx.Response:
    return await client.patch(
        f"/projects/{project_id}", headers=account.headers, json={"requireTwoFactor": on}
    )


def refused(response: httpx.Response) -> dict[str, Any]:
    problem = assert_problem(response, 403)
    assert problem["type"] == REFUSED
    assert "/app/settings/security" in problem["detail"]
    return problem


@pytest.fixture
async def locked(client: httpx.AsyncClient, cast: Cast, runtime: Runtime) -> dict[str, Any]:
    """Alice's project with a monitor and an incident; then Alice, with TOTP, requires it."""
    monitor = await create_monitor(client, cast.alice, cast.project_id, **TARGET)
    incident = await create_incident(client, cast.alice, cast.project_id)
    await turn_on_totp(runtime, cast.alice)
    answer = await require(client, cast.alice, cast.project_id)
    assert answer.status_code == 200, answer.text
    return {"monitor": monitor, "incident": incident}


async def test_a_project_says_whether_it_requires_two_factor(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    read = await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert read.json()["requireTwoFactor"] is False
    listed = await client.get("/projects", headers=cast.bob.headers)
    assert [p["requireTwoFactor"] for p in listed.json()] == [False]


async def test_the_owner_with_totp_turns_it_on_and_it_is_audited(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, locked: dict[str, Any]
) -> None:
    read = await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert read.status_code == 200, read.text
    assert read.json()["requireTwoFactor"] is True
    # The same value again is no change: no second event.
    assert (await require(client, cast.alice, cast.project_id)).status_code == 200
    off = await require(client, cast.alice, cast.project_id, on=False)
    assert off.json()["requireTwoFactor"] is False
    async with runtime.db.sessionmaker() as session:
        events = (
            await session.scalars(
                select(AuditEvent).where(AuditEvent.kind == PROJECT_TWO_FACTOR_CHANGED)
            )
        ).all()
    # The test's clock stands still: both events carry the same time.
    assert sorted((e.details["required"], e.actor_id, e.project_id) for e in events) == [
        (False, cast.alice.id, cast.project_id),
        (True, cast.alice.id, cast.project_id),
    ]


async def test_an_owner_without_a_second_factor_cannot_turn_it_on(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    problem = assert_problem(await require(client, cast.alice, cast.project_id), 409)
    assert "your own account first" in problem["detail"]
    read = await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert read.json()["requireTwoFactor"] is False


async def test_an_owner_with_a_passkey_may_turn_it_on(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime
) -> None:
    await add_passkey(runtime, cast.alice)
    assert (await require(client, cast.alice, cast.project_id)).status_code == 200


async def test_a_member_cannot_change_the_setting_even_as_project_manager_or_admin(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, make_admin: Any
) -> None:
    await turn_on_totp(runtime, cast.bob)
    assert_problem(await require(client, cast.bob, cast.project_id), 403)
    await make_admin(cast.bob, "admin")
    problem = assert_problem(await require(client, cast.bob, cast.project_id), 403)
    assert "owner" in problem["detail"]
    # Sending back the value it read is no change, and allowed with the other fields.
    same = await client.patch(
        f"/projects/{cast.project_id}",
        headers=cast.bob.headers,
        json={"name": "Shop 2", "requireTwoFactor": False},
    )
    assert same.status_code == 200, same.text


async def test_a_member_without_a_second_factor_is_refused_everywhere_in_the_project(
    client: httpx.AsyncClient, cast: Cast, locked: dict[str, Any]
) -> None:
    bob, project = cast.bob.headers, cast.project_id
    monitor, incident = locked["monitor"]["id"], locked["incident"]["id"]
    for path in (
        f"/projects/{project}",
        f"/projects/{project}/users",
        f"/projects/{project}/api-keys",
        f"/monitors/{monitor}",
        f"/monitors/{monitor}/checks",
        f"/monitors?projectId={project}",
        f"/incidents/{incident}",
        f"/incidents?projectId={project}",
        f"/status-pages?projectId={project}",
        f"/notification-providers/user?projectId={project}",
        f"/dashboard/uptime?projectId={project}",
    ):
        refused(await client.get(path, headers=bob))
    refused(
        await client.post(
            "/monitors", headers=bob, json={"projectId": project, "name": "New", **TARGET}
        )
    )
    refused(await client.patch(f"/monitors/{monitor}", headers=bob, json={"name": "x"}))
    refused(await client.delete(f"/incidents/{incident}", headers=bob))


async def test_lists_without_a_project_leave_the_refused_project_out_but_name_it(
    client: httpx.AsyncClient, cast: Cast, locked: dict[str, Any]
) -> None:
    for path in ("/monitors", "/incidents", "/dashboard/uptime"):
        answer = await client.get(path, headers=cast.bob.headers)
        assert answer.status_code == 200, answer.text
        assert answer.json() == []
    projects = await client.get("/projects", headers=cast.bob.headers)
    assert [(p["id"], p["requireTwoFactor"]) for p in projects.json()] == [(cast.project_id, True)]
    assert projects.headers["X-Total-Count"] == "1"


async def test_the_members_other_projects_are_unaffected(
    client: httpx.AsyncClient, cast: Cast, locked: dict[str, Any]
) -> None:
    own = await client.post("/projects", headers=cast.bob.headers, json={"name": "Bob's"})
    assert own.status_code == 201, own.text
    monitor = await create_monitor(client, cast.bob, own.json()["id"], **TARGET)
    assert (await client.get(f"/monitors/{monitor['id']}", headers=cast.bob.headers)).is_success
    listed = await client.get("/monitors", headers=cast.bob.headers)
    assert [m["id"] for m in listed.json()] == [monitor["id"]]


@pytest.mark.parametrize("factor", ["totp", "passkey"])
async def test_once_the_member_has_a_second_factor_the_project_opens(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, locked: dict[str, Any], factor: str
) -> None:
    await (turn_on_totp if factor == "totp" else add_passkey)(runtime, cast.bob)
    monitor = locked["monitor"]["id"]
    for path in (
        f"/projects/{cast.project_id}",
        f"/monitors/{monitor}",
        f"/monitors?projectId={cast.project_id}",
    ):
        answer = await client.get(path, headers=cast.bob.headers)
        assert answer.status_code == 200, answer.text
    assert [m["id"] for m in (await client.get("/monitors", headers=cast.bob.headers)).json()] == [
        monitor
    ]


async def test_an_api_key_of_the_project_is_unaffected(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime
) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    await turn_on_totp(runtime, cast.alice)
    assert (await require(client, cast.alice, cast.project_id)).status_code == 200
    # The key acts for Alice; even with her TOTP gone it is not a person signing in.
    async with runtime.db.sessionmaker() as session:
        alice = await session.get(User, cast.alice.id)
        assert alice is not None
        alice.totp_enabled_at = None
        await session.commit()
    assert (await client.get(f"/projects/{cast.project_id}", headers=key)).status_code == 200
    created = await client.post(
        "/monitors", headers=key, json={"projectId": cast.project_id, "name": "CI", **TARGET}
    )
    assert created.status_code == 201, created.text
    listed = await client.get("/monitors", headers=key)
    assert [m["id"] for m in listed.json()] == [created.json()["id"]]


async def test_a_non_member_still_gets_404_never_403(
    client: httpx.AsyncClient, cast: Cast, locked: dict[str, Any]
) -> None:
    charlie = cast.charlie.headers
    for path in (
        f"/projects/{cast.project_id}",
        f"/monitors/{locked['monitor']['id']}",
        f"/incidents/{locked['incident']['id']}",
    ):
        assert_problem(await client.get(path, headers=charlie), 404)
    listed = await client.get(f"/monitors?projectId={cast.project_id}", headers=charlie)
    assert listed.json() == []
    assert_problem(
        await client.post(
            "/monitors",
            headers=charlie,
            json={"projectId": cast.project_id, "name": "x", **TARGET},
        ),
        404,
    )


async def test_an_administrator_without_a_second_factor_is_refused_too(
    client: httpx.AsyncClient, cast: Cast, locked: dict[str, Any], admin: Account
) -> None:
    refused(await client.get(f"/projects/{cast.project_id}", headers=admin.headers))
    refused(await client.get(f"/monitors/{locked['monitor']['id']}", headers=admin.headers))


async def test_an_unknown_id_is_still_404_for_a_member_without_a_second_factor(
    client: httpx.AsyncClient, cast: Cast, locked: dict[str, Any]
) -> None:
    assert_problem(await client.get("/monitors/nope", headers=cast.bob.headers), 404)
    assert_problem(await client.get("/projects/nope", headers=cast.bob.headers), 404)


async def test_the_owner_who_loses_the_second_factor_is_shut_out_until_enrolled_again(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, locked: dict[str, Any]
) -> None:
    async with runtime.db.sessionmaker() as session:
        alice = await session.get(User, cast.alice.id)
        assert alice is not None
        alice.totp_enabled_at = None
        await session.commit()
    refused(await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers))
    await add_passkey(runtime, cast.alice)
    assert (await require(client, cast.alice, cast.project_id, on=False)).status_code == 200


@pytest.mark.parametrize("value", [None, 1, "yes", [], {}])
async def test_the_setting_takes_a_boolean_only(
    client: httpx.AsyncClient, cast: Cast, value: Any
) -> None:
    answer = await client.patch(
        f"/projects/{cast.project_id}",
        headers=cast.alice.headers,
        json={"requireTwoFactor": value},
    )
    if value is None:  # null leaves it as it is, like every field of this update
        assert answer.status_code == 200, answer.text
    else:
        assert_problem(answer, 422)


async def test_a_person_without_a_second_factor_can_still_join_and_is_then_refused(
    client: httpx.AsyncClient,
    cast: Cast,
    runtime: Runtime,
    mailbox: Mailbox,
    sign_up: SignUp,
) -> None:
    await turn_on_totp(runtime, cast.alice)
    assert (await require(client, cast.alice, cast.project_id)).status_code == 200
    dora = await sign_up("dora@example.com")
    invited = await client.post(
        f"/projects/{cast.project_id}/users", headers=cast.alice.headers, json={"email": dora.email}
    )
    assert invited.status_code == 201, invited.text
    await mailbox.wait_for(dora.email)
    accepted = await client.post(
        "/projects/invitations/accept",
        headers=dora.headers,
        json={"token": mailbox.invitation_token(dora.email)},
    )
    assert accepted.status_code == 200, accepted.text
    assert (accepted.json()["role"], accepted.json()["requireTwoFactor"]) == ("member", True)
    refused(await client.get(f"/projects/{cast.project_id}", headers=dora.headers))
