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
from typing import ClassVar

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.core.parameters import ParameterLocation

from tests.conftest import BACKEND, FUZZ_TIMEOUT, PASSWORD, _empty_tables
from tests.live_server import LiveServer, clean_env


@pytest.fixture(scope="module")
def live_server(
    tmp_path_factory: pytest.TempPathFactory, migrated_database: str
) -> Iterator[LiveServer]:
    env = clean_env() if BACKEND == "sqlite" else clean_env(UPWATCH_DATABASE_URL=migrated_database)
    # Generous throttles: the run sends many logins and contact messages from one address,
    # and more requests from one account than a free plan allows a day (the coverage phase
    # alone sends thousands to the monitor operations); metering has its own tests.
    env.update(
        UPWATCH_API_METERING="false",
        UPWATCH_LOGIN_FAILURES_ALLOWED="100000",
        UPWATCH_CONTACT_SUBMISSIONS_ALLOWED="100000",
        UPWATCH_SUBSCRIBE_REQUESTS_ALLOWED="100000",
    )
    server = LiveServer(Path(tmp_path_factory.mktemp("fuzz")), env).start()
    yield server
    server.stop()
    if BACKEND != "sqlite":
        asyncio.run(_empty_tables(migrated_database))


# "Valid request rejected" (positive_data_acceptance) cannot hold where a rule of the contract
# refuses input the schema allows; each operation here states its rule in its description.
SEMANTIC_REJECTIONS: dict[tuple[str, str], str] = {
    ("POST", "/auth/reset-password"): "an unknown reset token is a 400 (contract §4)",
    ("GET", "/projects/{id}/audit-log"): "`from` after `to` is a 422 (docs/audit-log.md)",
    ("GET", "/admin/audit-log"): "`from` after `to` is a 422 (docs/audit-log.md)",
    ("GET", "/users/me/security-events"): "`from` after `to` is a 422 (docs/audit-log.md)",
    ("PUT", "/users/settings"): "a time zone must be an IANA zone name (contract §5); a new "
    "`*Config` is checked like the provider config of its channel (docs/api.md, Accounts)",
    ("PUT", "/users/me"): "a new `*Config` in `settings` is checked like the provider config "
    "of its channel (docs/api.md, Accounts)",
    ("POST", "/auth/signup"): "an invitation token no invitation has is a 422 (docs/api.md, "
    "Projects and membership)",
    ("POST", "/users"): "an invitation token no invitation has is a 422 (docs/api.md, "
    "Projects and membership)",
    ("PATCH", "/monitors/{id}"): "targets at internal addresses, or whose host is no domain "
    "name, are refused, and what a "
    "monitor's type checks may not be null (contract §7); regions must exist, and masked "
    "secret headers do not follow `url` to another server (docs/api.md, Monitors); "
    "escalationPolicyId must be a policy of the monitor's project, dependsOn monitors of it "
    "without a cycle; a heartbeat schedule must occur; assertions must be ones that can be "
    "evaluated",
    ("POST", "/monitors"): "escalationPolicyId must be a policy of the monitor's project, "
    "dependsOn monitors of it, a heartbeat schedule must occur, in a known time zone, "
    "assertions must be ones that can be evaluated, and a target's host must be an address "
    "or a domain name DNS can look up (docs/api.md, Monitors)",
    ("POST", "/escalation-policies"): "every provider a step names must be a provider of the "
    "policy's project (docs/api.md, Escalation)",
    ("PATCH", "/escalation-policies/{id}"): "the same rule as creating a policy (docs/api.md, "
    "Escalation)",
    ("POST", "/projects/{id}/api-keys"): "expiresAt must be in the future (docs/api.md, API keys)",
    ("PATCH", "/projects/{id}"): "requireTwoFactor is turned on only by an owner whose own "
    "account has a second factor (409; docs/two-factor-projects.md)",
    ("POST", "/incidents/{id}/acknowledge"): "a resolved or already acknowledged incident "
    "answers 409 (docs/api.md, Escalation)",
    ("POST", "/incidents"): "monitorId must be a monitor of the incident's project (contract "
    "§8); statusPageIds and componentIds pages and components of it (docs/api.md, Incidents)",
    ("PATCH", "/incidents/{id}"): "monitorId must be a monitor of the incident's project "
    "(contract §8); statusPageIds and componentIds pages and components of it (docs/api.md, "
    "Incidents)",
    ("POST", "/notification-providers"): "URLs at internal addresses, or whose host is no "
    "domain name, are refused; quiet hours need both ends: one null or left out while the "
    "other is set is a 422 (contract §9)",
    ("PATCH", "/notification-providers/{id}"): "config is validated per type, URLs at "
    "internal addresses are refused, and quiet hours need both ends (contract §9)",
    ("POST", "/status-pages"): "a time zone must be an IANA zone name, `isPublic` may not "
    "contradict `visibility`, and a password page needs a password (docs/api.md, Status pages)",
    ("PATCH", "/status-pages/{id}"): "the same rules as creating a page (docs/api.md, Status "
    "pages)",
    ("POST", "/status-pages/{id}/subscribers"): "a hook's URL at an internal address, or whose "
    "host is no domain name, is refused, and componentIds must be components of the page "
    "(docs/api.md, Status pages)",
    ("PATCH", "/status-pages/{id}/status"): "componentIds must be components of the page "
    "(docs/api.md, Status pages)",
    ("GET", "/monitors/{id}/sla"): "`to` may not be before `from`, and a period spans at most "
    "400 days (docs/api.md, Monitors)",
    ("GET", "/projects/{id}/sla"): "`to` may not be before `from`, and a period spans at most "
    "400 days (docs/api.md, Monitors)",
    ("POST", "/maintenance-windows"): "endsAt must follow startsAt by at most 31 days, the "
    "rule must be one that can occur, the time zone an IANA name, and monitorIds monitors of "
    "the project (docs/api.md, Maintenance windows)",
    ("PATCH", "/maintenance-windows/{id}"): "the same rules as creating a window (docs/api.md, "
    "Maintenance windows)",
}


class Credentials:
    """A live account for authenticated operations, replaced when a case revokes it, with a
    project, a monitor, an incident and a provider of its own: generated requests to
    `/monitors/{id}` and the like reach a resource that exists, not only a 404."""

    # Path prefix -> the resource whose id its `{id}` takes.
    RESOURCES: ClassVar[dict[str, str]] = {
        "/projects/{id}": "project",
        "/monitors/{id}": "monitor",
        "/incidents/{id}": "incident",
        "/notification-providers/{id}": "provider",
        "/status-pages/{id}": "status_page",
        "/maintenance-windows/{id}": "maintenance_window",
        "/escalation-policies/{id}": "escalation_policy",
        # Another login of the account: ending it leaves the credentials' own session.
        "/users/me/sessions/{id}": "session",
    }

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self._token: str | None = None
        self._email = ""
        self._ids: dict[str, str] = {}

    def headers(self) -> dict[str, str]:
        if self._token is None:
            self._email = f"fuzz-{uuid.uuid4().hex}@example.com"
            response = httpx.post(
                f"{self.server.url}/auth/signup",
                json={"email": self._email, "password": PASSWORD},
            )
            response.raise_for_status()
            self._token = response.json()["access_token"]
        return {"Authorization": f"Bearer {self._token}"}

    def forget(self) -> None:
        self._token = None
        self._ids.clear()

    def resource_for(self, path: str) -> tuple[str, str] | None:
        """(kind, id) of this account's resource that ``path``'s `{id}` names, if any."""
        kind = next((k for p, k in self.RESOURCES.items() if path.startswith(p)), None)
        if kind is None:
            return None
        if kind not in self._ids:
            self._ids[kind] = self._create(kind)
        return kind, self._ids[kind]

    def gone(self, kind: str) -> None:
        """The resource was deleted (a project takes everything in it along)."""
        if kind == "project":
            self._ids.clear()
        self._ids.pop(kind, None)

    def _post(self, path: str, body: dict[str, object]) -> str:
        response = httpx.post(f"{self.server.url}{path}", headers=self.headers(), json=body)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def _create(self, kind: str) -> str:
        if kind == "session":
            self.headers()
            login = {"email": self._email, "password": PASSWORD}
            tokens = httpx.post(f"{self.server.url}/auth/login", json=login).json()
            listed = httpx.get(
                f"{self.server.url}/users/me/sessions",
                headers={"Authorization": f"Bearer {tokens['access_token']}"},
            ).json()
            return next(str(s["id"]) for s in listed if s["current"])
        if kind == "project":
            # The free plan holds one project, which a generated POST /projects may have made.
            mine = httpx.get(f"{self.server.url}/projects", headers=self.headers()).json()
            return str(mine[0]["id"]) if mine else self._post("/projects", {"name": "Fuzz"})
        project = {"projectId": self.resource_for("/projects/{id}")[1]}  # type: ignore[index]
        if kind == "monitor":
            return self._post(
                "/monitors",
                {**project, "name": "Fuzz", "type": "http", "url": "https://example.com/"},
            )
        if kind == "incident":
            return self._post("/incidents", {**project, "title": "Fuzz"})
        if kind == "maintenance_window":
            body = {"title": "Fuzz", "startsAt": "2030-01-01T00:00:00Z"}
            return self._post(
                "/maintenance-windows",
                {**project, **body, "endsAt": "2030-01-01T01:00:00Z", "rrule": "FREQ=DAILY"},
            )
        if kind == "escalation_policy":
            provider = self.resource_for("/notification-providers/{id}")[1]  # type: ignore[index]
            steps = [{"providerIds": [provider], "delayMinutes": 5}]
            return self._post("/escalation-policies", {**project, "name": "Fuzz", "steps": steps})
        if kind == "status_page":
            # The free plan holds one page, which a generated POST /status-pages may have made.
            pages = httpx.get(f"{self.server.url}/status-pages", headers=self.headers()).json()
            slug = f"fuzz-{uuid.uuid4().hex}"
            return (
                str(pages[0]["id"])
                if pages
                else self._post("/status-pages", {**project, "name": "Fuzz", "slug": slug})
            )
        return self._post(
            "/notification-providers",
            {
                **project,
                "name": "Fuzz",
                "type": "webhook",
                "config": {"url": "https://hooks.example.com/upwatch"},
            },
        )


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
    resource = None
    negative_path = case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)
    if "id" in case.path_parameters and not negative_path:
        resource = credentials.resource_for(case.path)
        if resource is not None:
            case.path_parameters["id"] = resource[1]
    excluded = (
        [schemathesis.checks.positive_data_acceptance]
        if (case.method, case.path) in SEMANTIC_REJECTIONS
        else []
    )
    # A case made invalid in its headers keeps them: our token in their place would turn it
    # into a valid request, which the server rightly accepts.
    negative_headers = case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER)
    response = case.call_and_validate(
        base_url=live_server.url,
        headers=None if negative_headers else credentials.headers(),
        excluded_checks=excluded,
    )
    if case.path == "/users/me" and case.method in {"PUT", "DELETE"}:
        credentials.forget()
    if case.path == "/users/me/sessions/revoke-others" and response.status_code == 200:
        credentials.gone("session")
    deleted = case.method == "DELETE" and response.status_code == 200
    # The resource itself went (not a member of its project): the next case needs a new one.
    if resource is not None and deleted and case.path.count("{") == 1:
        credentials.gone(resource[0])
