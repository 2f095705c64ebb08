"""How a domain service gets what it works with (``DomainService`` and ``uses``)."""

from __future__ import annotations

from typing import Any, cast

from upwatch.runtime import DomainService, Runtime, uses


class Repository:
    made = 0

    def __init__(self, session: Any) -> None:
        Repository.made += 1
        self.session = session


class Limits(DomainService):
    rows = uses(Repository)


class Shop(DomainService):
    rows = uses(Repository)
    limits = uses(Limits)


def test_a_service_builds_each_repository_on_first_use_and_keeps_it_for_the_request() -> None:
    session, runtime = object(), cast(Runtime, object())
    before = Repository.made
    shop = Shop(cast(Any, session), runtime)
    assert Repository.made == before  # nothing built before it is used
    assert shop.rows is shop.rows
    assert shop.rows.session is session
    assert Repository.made == before + 1


def test_a_service_it_uses_shares_its_session_and_runtime() -> None:
    session, runtime = object(), cast(Runtime, object())
    shop = Shop(cast(Any, session), runtime)
    assert shop.limits is shop.limits
    assert shop.limits.session is session
    assert shop.limits.runtime is runtime
    assert shop.limits.rows is not shop.rows  # each service its own, on the same session
    assert shop.limits.rows.session is session
