"""Projects, membership and invitations (seed 13, 14; contract §6), with the access cast."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from email.header import decode_header, make_header

import httpx
import pytest

from tests.conftest import PASSWORD, Account, Cast, InProject, Mailbox, SignUp, assert_problem
from tests.factories import (
    bearer,
    create_incident,
    create_monitor,
    create_page,
    create_provider,
    post_in_project,
)

Promote = Callable[[Account, str], Awaitable[None]]
Verify = Callable[[Account], Awaitable[None]]


async def test_creating_a_project_answers_201_with_the_project(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.post(
        "/projects", headers=alice.headers, json={"name": "Shop", "description": "the web shop"}
    )
    assert response.status_code == 201
    body = response.json()
    assert {k: body[k] for k in ("name", "description", "ownerId", "role")} == {
        "name": "Shop",
        "description": "the web shop",
        "ownerId": alice.id,
        "role": "owner",
    }
    assert body["createdAt"].endswith("Z")


@pytest.mark.parametrize(
    "body", [{"name": ""}, {"name": "x" * 101}, {"description": "no name"}, {"name": "a\nb"}]
)
async def test_project_fields_are_validated(
    client: httpx.AsyncClient, alice: Account, body: dict[str, str]
) -> None:
    assert_problem(await client.post("/projects", headers=alice.headers, json=body), 422)


async def test_projects_need_a_token(client: httpx.AsyncClient) -> None:
    assert_problem(await client.post("/projects", json={"name": "x"}), 401)
    assert_problem(await client.get("/projects"), 401)


async def test_the_free_plan_allows_one_project_then_402(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await client.post("/projects", headers=alice.headers, json={"name": "One"})
    response = await client.post("/projects", headers=alice.headers, json={"name": "Two"})
    problem = assert_problem(response, 402)
    assert problem["type"].endswith("/plan-limit")
    assert "projectCount" in problem["detail"]


async def test_members_and_owner_list_the_project_and_charlie_sees_nothing(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    for account, role in ((cast.alice, "owner"), (cast.bob, "member")):
        listing = await client.get("/projects", headers=account.headers)
        assert [(p["id"], p["role"]) for p in listing.json()] == [(cast.project_id, role)]
        assert listing.headers["X-Total-Count"] == "1"
    assert (await client.get("/projects", headers=cast.charlie.headers)).json() == []


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/projects/{id}", None),
        ("PATCH", "/projects/{id}", {"name": "Mine now"}),
        ("DELETE", "/projects/{id}", None),
        ("GET", "/projects/{id}/users", None),
        ("POST", "/projects/{id}/users", {"email": "charlie2@example.com"}),
        ("DELETE", "/projects/{id}/users/{bob}", None),
        ("DELETE", "/projects/{id}/invitations/whatever", None),
    ],
)
async def test_charlie_gets_404_on_every_project_route(
    client: httpx.AsyncClient, cast: Cast, method: str, path: str, body: object
) -> None:
    url = path.format(id=cast.project_id, bob=cast.bob.id)
    response = await client.request(method, url, headers=cast.charlie.headers, json=body)
    assert_problem(response, 404)
    # Nothing changed for the people who may see it.
    project = await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert project.json()["name"] == "Shop"
    members = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    assert len(members.json()) == 2


async def test_an_unknown_project_is_a_404_like_a_foreign_one(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    unknown = await client.get("/projects/does-not-exist", headers=cast.charlie.headers)
    foreign = await client.get(f"/projects/{cast.project_id}", headers=cast.charlie.headers)
    assert assert_problem(unknown, 404) == assert_problem(foreign, 404)


async def test_bob_reads_the_project_but_may_not_edit_delete_or_manage_members(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    pid = cast.project_id
    assert (await client.get(f"/projects/{pid}", headers=cast.bob.headers)).status_code == 200
    assert (await client.get(f"/projects/{pid}/users", headers=cast.bob.headers)).status_code == 200
    assert_problem(
        await client.patch(f"/projects/{pid}", headers=cast.bob.headers, json={"name": "X"}), 403
    )
    assert_problem(await client.delete(f"/projects/{pid}", headers=cast.bob.headers), 403)
    invite = await client.post(
        f"/projects/{pid}/users", headers=cast.bob.headers, json={"email": "dave@example.com"}
    )
    assert_problem(invite, 403)
    remove_owner = await client.delete(
        f"/projects/{pid}/users/{cast.alice.id}", headers=cast.bob.headers
    )
    assert_problem(remove_owner, 403)


async def test_alice_edits_her_project(client: httpx.AsyncClient, cast: Cast) -> None:
    response = await client.patch(
        f"/projects/{cast.project_id}",
        headers=cast.alice.headers,
        json={"name": "Web shop", "description": "checkout"},
    )
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["description"]) == ("Web shop", "checkout")


async def test_a_member_with_the_project_manager_role_manages_membership(
    client: httpx.AsyncClient, cast: Cast, make_admin: Promote, sign_up: SignUp
) -> None:
    await make_admin(cast.bob, "project_manager")
    await sign_up("dave@example.com")
    response = await client.post(
        f"/projects/{cast.project_id}/users",
        headers=cast.bob.headers,
        json={"email": "dave@example.com"},
    )
    assert response.status_code == 201
    assert_problem(
        await client.delete(f"/projects/{cast.project_id}", headers=cast.bob.headers), 403
    )


async def test_an_account_with_a_verified_address_is_added_at_once_and_told(
    client: httpx.AsyncClient,
    cast: Cast,
    sign_up: SignUp,
    verify_email: Verify,
    mailbox: Mailbox,
    as_alice: InProject,
) -> None:
    dave = await sign_up("dave@example.com")
    await verify_email(dave)
    response = await as_alice.invite(dave.email)
    assert response.status_code == 201
    assert response.json() == {
        "projectId": cast.project_id,
        "email": dave.email,
        "userId": dave.id,
        "role": "member",
        "status": "added",
    }
    [mail] = await mailbox.wait_for(dave.email)
    assert "Shop" in str(mail["Subject"])
    members = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    rows = {m["email"]: m for m in members.json()}
    assert (rows[dave.email]["status"], rows[dave.email]["role"]) == ("active", "member")
    assert rows[cast.alice.email]["role"] == "owner"


async def test_an_unverified_account_is_invited_by_token_and_joins_with_it(
    client: httpx.AsyncClient, cast: Cast, sign_up: SignUp, mailbox: Mailbox, as_alice: InProject
) -> None:
    dave = await sign_up("dave@example.com")
    response = await as_alice.invite(dave.email)
    assert response.json()["status"] == "pending"
    assert_problem(await client.get(f"/projects/{cast.project_id}", headers=dave.headers), 404)
    await mailbox.wait_for(dave.email)
    token = mailbox.invitation_token(dave.email)
    joined = await client.post(
        "/projects/invitations/accept", headers=dave.headers, json={"token": token}
    )
    assert joined.status_code == 200
    assert (joined.json()["id"], joined.json()["role"]) == (cast.project_id, "member")
    me = await client.get("/users/me", headers=dave.headers)
    assert me.json()["isEmailVerified"] is True  # the token proved the address
    again = await client.post(
        "/projects/invitations/accept", headers=dave.headers, json={"token": token}
    )
    assert_problem(again, 404)


async def test_someone_else_cannot_use_an_invitation_token(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    await as_alice.invite("dave@example.com")
    await mailbox.wait_for("dave@example.com")
    token = mailbox.invitation_token("dave@example.com")
    stolen = await client.post(
        "/projects/invitations/accept", headers=cast.charlie.headers, json={"token": token}
    )
    assert_problem(stolen, 404)
    assert_problem(
        await client.get(f"/projects/{cast.project_id}", headers=cast.charlie.headers), 404
    )


async def test_signing_up_with_an_invited_address_but_no_token_joins_nothing(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.invite("dave@example.com")
    squatter = await client.post(
        "/auth/signup", json={"email": "dave@example.com", "password": PASSWORD}
    )
    headers = bearer(squatter, 201)
    assert (await client.get("/projects", headers=headers)).json() == []
    anonymous = await client.post("/users", json={"email": "erin@example.com"})
    assert anonymous.status_code == 201
    listing = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    assert [m["email"] for m in listing.json() if m["status"] == "pending"] == ["dave@example.com"]


async def test_inviting_an_unknown_address_sends_a_token_that_signup_redeems(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    response = await as_alice.invite("Dave@Example.com")
    assert response.status_code == 201
    assert response.json() == {
        "projectId": cast.project_id,
        "email": "dave@example.com",
        "userId": None,
        "role": "member",
        "status": "pending",
    }
    await mailbox.wait_for("dave@example.com")
    token = mailbox.invitation_token("dave@example.com")

    listing = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    pending = [m for m in listing.json() if m["status"] == "pending"]
    assert [m["email"] for m in pending] == ["dave@example.com"]

    signup = await client.post(
        "/auth/signup",
        json={"email": "dave@example.com", "password": PASSWORD, "invitationToken": token},
    )
    assert signup.status_code == 201
    dave = {"Authorization": f"Bearer {signup.json()['access_token']}"}
    projects = await client.get("/projects", headers=dave)
    assert [p["id"] for p in projects.json()] == [cast.project_id]
    listing = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    assert all(m["status"] == "active" for m in listing.json())


async def test_an_invitation_token_is_also_redeemed_by_post_users(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox, as_alice: InProject
) -> None:
    await as_alice.invite("erin@example.com")
    await mailbox.wait_for("erin@example.com")
    created = await client.post(
        "/users",
        json={
            "email": "erin@example.com",
            "password": PASSWORD,
            "invitationToken": mailbox.invitation_token("erin@example.com"),
        },
    )
    assert created.status_code == 201
    assert created.json()["isEmailVerified"] is True
    members = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    erin = [m for m in members.json() if m["email"] == "erin@example.com"]
    assert erin[0]["status"] == "active"


async def test_a_wrong_invitation_token_at_signup_is_a_422_and_creates_no_account(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await client.post(
        "/auth/signup",
        json={"email": "dave@example.com", "password": PASSWORD, "invitationToken": "forged"},
    )
    problem = assert_problem(response, 422)
    assert problem["errors"][0]["field"] == "invitationToken"
    retry = await client.post(
        "/auth/signup", json={"email": "dave@example.com", "password": PASSWORD}
    )
    assert retry.status_code == 201


async def test_an_admin_who_is_a_plain_member_keeps_admin_rights(
    client: httpx.AsyncClient, cast: Cast, make_admin: Promote
) -> None:
    await make_admin(cast.bob, "admin")
    renamed = await client.patch(
        f"/projects/{cast.project_id}", headers=cast.bob.headers, json={"name": "Moderated"}
    )
    assert renamed.status_code == 200
    deleted = await client.delete(f"/projects/{cast.project_id}", headers=cast.bob.headers)
    assert deleted.status_code == 200


async def test_long_names_do_not_break_the_invitation_mail(
    client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox
) -> None:
    alice = await sign_up("alice@example.com", firstName="A" * 100, lastName="L" * 100)
    project = await client.post("/projects", headers=alice.headers, json={"name": "P" * 100})
    response = await client.post(
        f"/projects/{project.json()['id']}/users",
        headers=alice.headers,
        json={"email": "dave@example.com"},
    )
    assert response.status_code == 201
    [mail] = await mailbox.wait_for("dave@example.com")
    subject = str(make_header(decode_header(str(mail["Subject"]))))
    assert subject.startswith("AAAA")
    assert len(subject) <= 250


async def test_inviting_a_member_or_an_invitee_again_is_a_409(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    url = f"/projects/{cast.project_id}/users"
    assert_problem(
        await client.post(url, headers=cast.alice.headers, json={"email": cast.bob.email}), 409
    )
    await client.post(url, headers=cast.alice.headers, json={"email": "dave@example.com"})
    assert_problem(
        await client.post(url, headers=cast.alice.headers, json={"email": "DAVE@example.com"}), 409
    )
    assert_problem(
        await client.post(url, headers=cast.alice.headers, json={"email": cast.alice.email}), 409
    )


async def test_an_invitation_needs_a_valid_address(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    response = await as_alice.invite("nope")
    assert_problem(response, 422)


async def test_team_members_per_project_is_enforced_with_a_402(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    url = f"/projects/{cast.project_id}/users"
    # Bob plus two invitees fill the free plan's 3 seats (the owner is not counted).
    for email in ("dave@example.com", "erin@example.com"):
        assert (
            await client.post(url, headers=cast.alice.headers, json={"email": email})
        ).status_code == 201
    response = await client.post(
        url, headers=cast.alice.headers, json={"email": "frank@example.com"}
    )
    problem = assert_problem(response, 402)
    assert "teamMembersPerProject" in problem["detail"]


async def test_team_members_across_projects_is_enforced_with_a_402(
    client: httpx.AsyncClient, sign_up: SignUp, alice: Account, make_admin: Promote
) -> None:
    admin = await sign_up("root@example.com")
    await make_admin(admin, "super_admin")
    # Alice needs room for two projects, but the free plan's 3 team members overall.
    await client.patch(f"/admin/users/{alice.id}", headers=admin.headers, json={"plan": "pro"})
    projects = [
        (await client.post("/projects", headers=alice.headers, json={"name": n})).json()["id"]
        for n in ("One", "Two")
    ]
    await client.patch(f"/admin/users/{alice.id}", headers=admin.headers, json={"plan": "free"})
    for pid, email in (
        (projects[0], "a1@example.com"),
        (projects[0], "a2@example.com"),
        (projects[1], "a3@example.com"),
    ):
        ok = await client.post(
            f"/projects/{pid}/users", headers=alice.headers, json={"email": email}
        )
        assert ok.status_code == 201, ok.text
    # The same person in a second project is not a new team member...
    again = await client.post(
        f"/projects/{projects[1]}/users", headers=alice.headers, json={"email": "a1@example.com"}
    )
    assert again.status_code == 201
    # ...a fourth person is.
    response = await client.post(
        f"/projects/{projects[1]}/users", headers=alice.headers, json={"email": "a4@example.com"}
    )
    problem = assert_problem(response, 402)
    assert "teamMembers" in problem["detail"]


async def test_alice_removes_bob_and_he_loses_access(client: httpx.AsyncClient, cast: Cast) -> None:
    response = await client.delete(
        f"/projects/{cast.project_id}/users/{cast.bob.id}", headers=cast.alice.headers
    )
    assert response.status_code == 200
    assert response.json() == {"id": cast.bob.id, "deleted": True}
    assert_problem(await client.get(f"/projects/{cast.project_id}", headers=cast.bob.headers), 404)


async def test_bob_may_leave_the_project(client: httpx.AsyncClient, cast: Cast) -> None:
    response = await client.delete(
        f"/projects/{cast.project_id}/users/{cast.bob.id}", headers=cast.bob.headers
    )
    assert response.status_code == 200
    assert (await client.get("/projects", headers=cast.bob.headers)).json() == []


async def test_the_owner_cannot_be_removed(client: httpx.AsyncClient, cast: Cast) -> None:
    response = await client.delete(
        f"/projects/{cast.project_id}/users/{cast.alice.id}", headers=cast.alice.headers
    )
    assert_problem(response, 409)


async def test_removing_someone_who_is_not_a_member_is_a_404(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await client.delete(
        f"/projects/{cast.project_id}/users/{cast.charlie.id}", headers=cast.alice.headers
    )
    assert_problem(response, 404)


async def test_a_pending_invitation_can_be_withdrawn(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.invite("dave@example.com")
    listing = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    [pending] = [m for m in listing.json() if m["status"] == "pending"]
    url = f"/projects/{cast.project_id}/invitations/{pending['invitationId']}"
    assert_problem(await client.delete(url, headers=cast.bob.headers), 403)
    assert (await client.delete(url, headers=cast.alice.headers)).status_code == 200
    assert_problem(await client.delete(url, headers=cast.alice.headers), 404)


async def test_deleting_a_project_is_for_the_owner_and_removes_everything(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.invite("dave@example.com")
    response = await client.delete(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert response.status_code == 200
    assert response.json() == {"id": cast.project_id, "deleted": True}
    assert_problem(
        await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers), 404
    )
    assert (await client.get("/projects", headers=cast.bob.headers)).json() == []
    # The project's slot is free again.
    again = await client.post("/projects", headers=cast.alice.headers, json={"name": "New"})
    assert again.status_code == 201


async def test_an_admin_may_delete_any_project(
    client: httpx.AsyncClient, cast: Cast, make_admin: Promote, sign_up: SignUp
) -> None:
    admin = await sign_up("root@example.com")
    await make_admin(admin, "admin")
    response = await client.delete(f"/projects/{cast.project_id}", headers=admin.headers)
    assert response.status_code == 200


async def test_an_admins_lists_show_only_its_own_projects_yet_it_opens_any_by_id(
    client: httpx.AsyncClient, cast: Cast, make_admin: Promote
) -> None:
    # The one access rule: lists are member-only for everyone, administrators reach any
    # project (and what is in it) by id.
    admin = cast.charlie
    await make_admin(admin, "admin")
    project = cast.project_id
    monitor = await create_monitor(
        client, cast.alice, project, type="heartbeat", intervalSeconds=3600
    )
    incident = await client.post(
        "/incidents", headers=cast.alice.headers, json={"title": "Slow", "projectId": project}
    )
    provider = await post_in_project(
        client,
        cast.alice,
        project,
        "/notification-providers",
        type="email",
        name="Team",
        config={"to": ["ops@example.com"]},
    )
    assert (incident.status_code, provider.status_code) == (201, 201), provider.text
    by_id = [
        f"/projects/{project}",
        f"/monitors/{monitor['id']}",
        f"/incidents/{incident.json()['id']}",
        f"/notification-providers/{provider.json()['id']}",
    ]
    for url in by_id:
        assert (await client.get(url, headers=admin.headers)).status_code == 200, url
    lists = [
        ("/projects", {}),
        ("/monitors", {"projectId": project}),
        ("/incidents", {"projectId": project}),
        ("/notification-providers/user", {"projectId": project}),
        ("/dashboard/uptime", {}),
    ]
    for url, params in lists:
        listed = await client.get(url, headers=admin.headers, params=params)
        assert (listed.status_code, listed.json()) == (200, []), url
    # Bob, a member, lists the same rows.
    for url, params in lists:
        listed = await client.get(url, headers=cast.bob.headers, params=params)
        assert len(listed.json()) == 1, url


async def test_deleting_an_account_removes_its_projects_and_memberships(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await client.delete("/users/me", headers=cast.alice.headers)
    assert (await client.get("/projects", headers=cast.bob.headers)).json() == []
    # Bob's own account is untouched, and he may delete his, leaving nothing behind either.
    assert (await client.delete("/users/me", headers=cast.bob.headers)).status_code == 200


async def _fill(client: httpx.AsyncClient, account: Account, project_id: str, tag: str) -> None:
    """One of each listed thing in the project, made by ``account``."""
    headers = account.headers
    await create_monitor(client, account, project_id, type="heartbeat", intervalSeconds=3600)
    await create_incident(client, account, project_id)
    await create_page(client, account, project_id, slug=f"status-{tag}")
    provider = await create_provider(
        client, headers, project_id, type="email", name="Team", config={"to": ["o@example.com"]}
    )
    for path, body in (
        (
            "/maintenance-windows",
            {
                "title": "Upgrade",
                "startsAt": "2030-01-01T00:00:00Z",
                "endsAt": "2030-01-01T01:00:00Z",
            },
        ),
        (
            "/escalation-policies",
            {"name": "On call", "steps": [{"providerIds": [provider["id"]], "delayMinutes": 5}]},
        ),
    ):
        made = await client.post(path, headers=headers, json={"projectId": project_id, **body})
        assert made.status_code == 201, made.text


async def test_an_api_key_lists_only_its_project_though_its_owner_belongs_to_another_tenants(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox
) -> None:
    # Charlie's project, which Alice (the key's owner) joins as a member.
    other = await client.post("/projects", headers=cast.charlie.headers, json={"name": "C"})
    other_id = other.json()["id"]
    invited = await client.post(
        f"/projects/{other_id}/users",
        headers=cast.charlie.headers,
        json={"email": "alice@example.com"},
    )
    assert invited.status_code == 201, invited.text
    await mailbox.wait_for(cast.alice.email)
    accepted = await client.post(
        "/projects/invitations/accept",
        headers=cast.alice.headers,
        json={"token": mailbox.invitation_token(cast.alice.email)},
    )
    assert accepted.status_code == 200, accepted.text
    await _fill(client, cast.alice, cast.project_id, "alice")
    await _fill(client, cast.charlie, other_id, "charlie")
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "read"},
    )
    key = {"Authorization": f"Bearer {made.json()['key']}"}

    lists = [
        "/projects",
        "/monitors",
        "/incidents",
        "/status-pages",
        "/notification-providers/user",
        "/maintenance-windows",
        "/escalation-policies",
        "/dashboard/uptime",
        "/dashboard/performance-metrics",
    ]

    def projects(rows: list[dict[str, str]]) -> list[str]:
        return [row["projectId"] if "projectId" in row else row["id"] for row in rows]

    for path in lists:
        # Alice herself lists both projects' rows; her key, its own project's only.
        mine = await client.get(path, headers=cast.alice.headers)
        assert set(projects(mine.json())) == {cast.project_id, other_id}, path
        listed = await client.get(path, headers=key)
        assert listed.status_code == 200, listed.text
        assert projects(listed.json()) == [cast.project_id], path
        if "X-Total-Count" in listed.headers:
            assert listed.headers["X-Total-Count"] == "1", path
        if path != "/projects":
            narrowed = await client.get(path, headers=key, params={"projectId": other_id})
            assert narrowed.status_code in (200, 404), path
            assert narrowed.status_code == 404 or narrowed.json() == [], path
