"""Every API operation a team member, owner or administrator uses has a console page or form.

A console route names the operations it does (``openapi_extra=offers(...)``, in
``upwatch/console/endpoints/``); this test lists every operation of ``/openapi.json`` and
fails for one that no console route offers and that is not on the reviewed list of API-only
operations below, each kept with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from upwatch.app import create_app
from upwatch.console.endpoints.offers import OFFERS

pytestmark = pytest.mark.db_independent

API_ONLY: Final = {
    "refreshToken": "bearer-token rotation; a console session is a cookie, not a token pair",
    "createUser": "the seed's user creation for API clients; the console signs up at /app/signup",
    "heartbeatPost": "pinged by the watched job, not by a person",
    "heartbeatGet": "pinged by the watched job, not by a person",
    "heartbeatReportPost": "pinged by the watched job, not by a person",
    "heartbeatReportGet": "pinged by the watched job, not by a person",
    "getPublicStatusPage": "the public JSON for scripts; people read the page at /s/{slug}",
    "subscribeToStatusPage": "visitors subscribe on the public page /s/{slug}, not in the console",
    "unlockStatusPage": "visitors give a password page's password on its own form at /s/{slug}",
    "submitContact": "the public contact form for people without an account",
    "healthz": "for orchestrators and load balancers",
    "readyz": "for orchestrators and load balancers",
    "metrics": "Prometheus scrapes it",
    "configFileSchema": "read by editors checking an `upwatch apply` file",
    "recordConfigApplied": "sent by `upwatch apply` after a run; people read it in the audit log",
}


@pytest.fixture(scope="module")
def routes() -> FastAPI:
    """The application's routes and OpenAPI document (nothing started)."""
    return create_app()


def _operations(app: FastAPI) -> set[str]:
    document = app.openapi()
    return {
        operation["operationId"]
        for methods in document["paths"].values()
        for operation in methods.values()
    }


def _offered(app: FastAPI) -> dict[str, list[str]]:
    """Each offered operation with the console routes that offer it."""
    found: dict[str, list[str]] = {}
    for route in _routes_in(app.routes):
        for operation in (route.openapi_extra or {}).get(OFFERS, []):
            found.setdefault(operation, []).append(route.name)
    return found


def _routes_in(routes: Sequence[BaseRoute]) -> Iterator[APIRoute]:
    """Every route, those of included routers too (FastAPI keeps those routers whole)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes_in(included.routes)


def test_every_operation_a_team_uses_has_a_console_page(routes: FastAPI) -> None:
    missing = _operations(routes) - set(_offered(routes)) - set(API_ONLY)
    assert missing == set(), f"API operations the console does not offer: {sorted(missing)}"


def test_the_console_offers_only_operations_the_api_has(routes: FastAPI) -> None:
    unknown = set(_offered(routes)) - _operations(routes)
    assert unknown == set(), f"console routes name operations the API lacks: {sorted(unknown)}"


def test_the_api_only_list_names_real_operations_the_console_does_not_offer(
    routes: FastAPI,
) -> None:
    operations, offered = _operations(routes), set(_offered(routes))
    assert set(API_ONLY) - operations == set()
    assert set(API_ONLY) & offered == set(), "offered now: drop it from the list"
