"""An audit event is stored with the request's address and user agent, in the request's
transaction."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select

from tests.conftest import Account
from upwatch.audit.service import record
from upwatch.kit.origin import Origin, origin_of, request_origin
from upwatch.models import AuditEvent, User
from upwatch.runtime import Runtime


def test_the_origin_is_read_from_the_connection_and_its_user_agent() -> None:
    scope = {"client": ("203.0.113.9", 5000), "headers": [(b"user-agent", b"A" * 500)]}
    assert origin_of(scope) == Origin("203.0.113.9", "A" * 400)
    assert origin_of({"headers": []}) == Origin("", "")


async def test_an_event_names_the_origin_of_the_request_it_was_recorded_in(
    runtime: Runtime, alice: Account, client: httpx.AsyncClient
) -> None:
    token = request_origin.set(Origin("198.51.100.7", "curl/8"))
    try:
        async with runtime.db.worksession() as session:
            user = await session.get(User, alice.id)
            assert user is not None
            await record(session, "password.changed", runtime.clock.now(), actor=user)
            await session.commit()
    finally:
        request_origin.reset(token)
    async with runtime.db.worksession() as session:
        event = (await session.scalars(select(AuditEvent))).one()
    assert (event.kind, event.actor_id, event.account_id) == (
        "password.changed",
        alice.id,
        alice.id,
    )
    assert (event.address, event.user_agent, event.actor_label) == (
        "198.51.100.7",
        "curl/8",
        alice.email,
    )


async def test_an_unknown_kind_is_a_programming_error(runtime: Runtime) -> None:
    async with runtime.db.worksession() as session:
        with pytest.raises(ValueError, match="unknown audit event kind"):
            await record(session, "made.up", runtime.clock.now(), actor=None)
