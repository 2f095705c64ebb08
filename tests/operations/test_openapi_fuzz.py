"""Property-based run over the app's own /openapi.json (schemathesis) against a live server.

Every generated request must get an answer that its operation documents, with a body that
matches the documented schema, and never a 500.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.conftest import BACKEND, FUZZ_TIMEOUT, PASSWORD, _empty_tables
from tests.live_server import LiveServer, clean_env


@pytest.fixture(scope="module")
def live_server(
    tmp_path_factory: pytest.TempPathFactory, database_url: str
) -> Iterator[LiveServer]:
    env = clean_env() if BACKEND == "sqlite" else clean_env(UPWATCH_DATABASE_URL=database_url)
    # Generous throttles: the run sends many logins and contact messages from one address.
    env.update(
        UPWATCH_LOGIN_FAILURES_ALLOWED="100000", UPWATCH_CONTACT_SUBMISSIONS_ALLOWED="100000"
    )
    server = LiveServer(Path(tmp_path_factory.mktemp("fuzz")), env).start()
    yield server
    server.stop()
    if BACKEND != "sqlite":
        asyncio.run(_empty_tables(database_url))


# Operations where input the schema allows is still refused by a rule the contract sets, so
# "schema-valid data must be accepted" cannot hold there: an unknown reset token is a 400
# (contract §4), a time zone must exist in the IANA database (contract §5), and an
# invitation token that no invitation has is a 422 (docs/api.md, "Projects and membership").
SEMANTIC_REJECTIONS = {
    ("POST", "/auth/reset-password"): [schemathesis.checks.positive_data_acceptance],
    ("PUT", "/users/settings"): [schemathesis.checks.positive_data_acceptance],
    ("POST", "/auth/signup"): [schemathesis.checks.positive_data_acceptance],
    ("POST", "/users"): [schemathesis.checks.positive_data_acceptance],
}


class Credentials:
    """A live account for authenticated operations, replaced when a case revokes it."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self._token: str | None = None

    def headers(self) -> dict[str, str]:
        if self._token is None:
            response = httpx.post(
                f"{self.server.url}/auth/signup",
                json={"email": f"fuzz-{uuid.uuid4().hex}@example.com", "password": PASSWORD},
            )
            response.raise_for_status()
            self._token = response.json()["access_token"]
        return {"Authorization": f"Bearer {self._token}"}

    def forget(self) -> None:
        self._token = None


@pytest.fixture(scope="module")
def credentials(live_server: LiveServer) -> Credentials:
    return Credentials(live_server)


@pytest.fixture(scope="module")
def api_schema(live_server: LiveServer) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{live_server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.timeout(FUZZ_TIMEOUT)
@schema.parametrize()
@settings(
    # 10 per operation keeps the whole CI run (about 60 operations, two databases) under 15
    # minutes on two cores; UPWATCH_FUZZ_EXAMPLES asks for a deeper run.
    max_examples=int(os.environ.get("UPWATCH_FUZZ_EXAMPLES", "10")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)
def test_every_operation_answers_within_its_documented_contract(
    case: schemathesis.Case, live_server: LiveServer, credentials: Credentials
) -> None:
    excluded = SEMANTIC_REJECTIONS.get((case.method, case.path), [])
    case.call_and_validate(
        base_url=live_server.url, headers=credentials.headers(), excluded_checks=excluded
    )
    if case.path == "/users/me" and case.method in {"PUT", "DELETE"}:
        credentials.forget()
