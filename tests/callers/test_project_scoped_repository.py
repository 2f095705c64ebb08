"""The project-scoped repository base (callers/access.py): who sees which row, by id and in lists.

The base is exercised on escalation policies (a small model with a ``project_id``), through a
repository of the test's own, so what is tested is the base and not a domain's use of it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.conftest import Account, Cast
from upwatch.callers.access import ProjectScopedRepository
from upwatch.kit.errors import NotFound
from upwatch.models import EscalationPolicy, User
from upwatch.models.user import KeyGrant
from upwatch.runtime import Runtime

START = datetime(2030, 1, 1, tzinfo=UTC)


class Policies(ProjectScopedRepository[EscalationPolicy]):
    model = EscalationPolicy
    order = (EscalationPolicy.created_at, EscalationPolicy.id)
    not_found = "no such policy here"


@dataclass
class Tenants:
    """Alice's project (Bob a member) with three policies; Charlie's own with one."""

    cast: Cast
    charlie_project_id: str
    alice_policies: list[str]
    charlie_policy: str


@pytest.fixture
async def tenants(client: httpx.AsyncClient, cast: Cast, runtime: Runtime) -> Tenants:
    created = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Mine"})
    assert created.status_code == 201, created.text
    charlie_project_id = created.json()["id"]
    async with runtime.db.sessionmaker() as session:
        rows = [
            EscalationPolicy(
                project_id=project_id,
                name=name,
                steps=[],
                created_at=START + timedelta(minutes=minute),
                updated_at=START,
            )
            for minute, (project_id, name) in enumerate(
                [
                    (cast.project_id, "first"),
                    (charlie_project_id, "charlie's"),
                    (cast.project_id, "second"),
                    (cast.project_id, "third"),
                ]
            )
        ]
        session.add_all(rows)
        await session.commit()
        ids = [row.id for row in rows]
    return Tenants(cast, charlie_project_id, [ids[0], ids[2], ids[3]], ids[1])


@pytest.fixture
async def session(runtime: Runtime) -> AsyncIterator[AsyncSession]:
    async with runtime.db.sessionmaker() as session:
        yield session


async def caller(session: AsyncSession, account: Account, grant: KeyGrant | None = None) -> User:
    user = await session.get(User, account.id)
    assert user is not None
    user.grant = grant
    return user


async def test_a_member_opens_a_row_of_its_project_by_id(
    tenants: Tenants, session: AsyncSession
) -> None:
    bob = await caller(session, tenants.cast.bob)
    policy = await Policies(session).get_visible(bob, tenants.alice_policies[0])
    assert policy.name == "first"


async def test_another_tenants_row_is_not_found_in_the_domains_words(
    tenants: Tenants, session: AsyncSession
) -> None:
    charlie = await caller(session, tenants.cast.charlie)
    with pytest.raises(NotFound) as unseen:
        await Policies(session).get_visible(charlie, tenants.alice_policies[0])
    with pytest.raises(NotFound) as missing:
        await Policies(session).get_visible(charlie, "0" * 32)
    # Both read alike: a 404 never tells that the row exists elsewhere.
    assert unseen.value.detail == missing.value.detail == "no such policy here"


async def test_a_list_shows_the_callers_rows_in_order_a_page_at_a_time_with_the_total(
    tenants: Tenants, session: AsyncSession
) -> None:
    alice = await caller(session, tenants.cast.alice)
    first = await Policies(session).list_visible(alice, 2, 0)
    second = await Policies(session).list_visible(alice, 2, 2)
    assert [p.name for p in first.rows] == ["first", "second"]
    assert [p.name for p in second.rows] == ["third"]
    assert first.total == second.total == 3


async def test_a_list_leaves_out_another_tenants_rows_even_when_narrowed_to_its_project(
    tenants: Tenants, session: AsyncSession
) -> None:
    alice = await caller(session, tenants.cast.alice)
    listed = await Policies(session).list_visible(
        alice, 100, 0, project_id=tenants.charlie_project_id
    )
    assert (list(listed.rows), listed.total) == ([], 0)
    charlie = await caller(session, tenants.cast.charlie)
    assert [p.id for p in (await Policies(session).list_visible(charlie, 100, 0)).rows] == [
        tenants.charlie_policy
    ]


async def test_a_list_narrows_by_the_conditions_a_domain_adds(
    tenants: Tenants, session: AsyncSession
) -> None:
    bob = await caller(session, tenants.cast.bob)
    listed = await Policies(session).list_visible(
        bob, 100, 0, where=[EscalationPolicy.name != "second"]
    )
    assert ([p.name for p in listed.rows], listed.total) == (["first", "third"], 2)


async def test_an_administrator_opens_any_row_by_id_but_lists_only_its_own_projects(
    tenants: Tenants,
    session: AsyncSession,
    make_admin: Callable[[Account, str], Awaitable[None]],
) -> None:
    await make_admin(tenants.cast.charlie, "admin")
    charlie = await caller(session, tenants.cast.charlie)
    policy = await Policies(session).get_visible(charlie, tenants.alice_policies[1])
    assert policy.name == "second"
    listed = await Policies(session).list_visible(charlie, 100, 0)
    assert [p.id for p in listed.rows] == [tenants.charlie_policy]


async def test_an_api_key_sees_only_its_own_project_though_its_owner_belongs_to_others(
    tenants: Tenants, session: AsyncSession, client: httpx.AsyncClient
) -> None:
    # Bob belongs to Alice's project and owns one of his own; a key of his project acts for
    # him, but must not reach Alice's rows.
    created = await client.post("/projects", headers=tenants.cast.bob.headers, json={"name": "B"})
    assert created.status_code == 201, created.text
    own = EscalationPolicy(project_id=created.json()["id"], name="bob's", steps=[])
    session.add(own)
    await session.flush()
    grant = KeyGrant(key_id="k" * 32, project_id=own.project_id, scope="read")
    bob_by_key = await caller(session, tenants.cast.bob, grant)
    with pytest.raises(NotFound):
        await Policies(session).get_visible(bob_by_key, tenants.alice_policies[0])
    assert (await Policies(session).get_visible(bob_by_key, own.id)).name == "bob's"
    listed = await Policies(session).list_visible(bob_by_key, 100, 0)
    assert ([p.id for p in listed.rows], listed.total) == ([own.id], 1)
