"""Single sign-on by OpenID Connect against a real provider (oidc-provider under Node, on
loopback), driven over HTTP: the console's flow from /app/sso through the provider's login
form back to /app/sso/callback, and every refusal: a forged state, a wrong nonce, an
unverified e-mail, a cancelled sign-in, a closed service, another subject for a linked
address. No answer and no log line holds the client secret or the code."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import pytest
from sqlalchemy import select

from tests.accounts.test_signup_modes import SIGNUP_CLOSED, admin_headers
from tests.conftest import PASSWORD, SignUp, assert_problem, free_port
from tests.console.forms import csrf_of, submit
from tests.factories import log_in
from tests.openid_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    OpenIdServer,
    cancel_at_provider,
    openid_provider,
    sign_in_at_provider,
)
from upwatch.config import Settings
from upwatch.models import AuditEvent, User
from upwatch.runtime import Runtime

PUBLIC = "http://upwatch.test"
CALLBACK = f"{PUBLIC}/app/sso/callback"


@pytest.fixture(scope="module")
def openid() -> Iterator[OpenIdServer]:
    with openid_provider(CALLBACK) as server:
        yield server


@pytest.fixture
def signup() -> str:
    return "open"


@pytest.fixture
def settings_overrides(openid: OpenIdServer, signup: str) -> dict[str, Any]:
    return {
        "oidc_issuer": openid.issuer,
        "oidc_client_id": CLIENT_ID,
        "oidc_client_secret": CLIENT_SECRET,
        "oidc_scopes": "openid email profile groups",
        "oidc_admin_claim": "groups=upwatch-admins",
        "oidc_name": "Example ID",
        "signup": signup,
    }


@pytest.fixture(autouse=True)
def everything_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG, logger="upwatch")
    yield
    assert CLIENT_SECRET not in caplog.text


class Flow:
    """One visitor: the console client (its cookies) and the provider's browser."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.codes: list[str] = []
        self.answers: list[httpx.Response] = []

    async def start(self, query: str = "") -> str:
        started = await self.client.get(f"/app/sso{query}")
        assert started.status_code == 303, started.text
        return started.headers["location"]

    async def back(self, location: str) -> httpx.Response:
        self.codes += parse_qs(urlsplit(location).query).get("code", [])
        answer = await self.client.get(location.removeprefix(PUBLIC))
        self.answers.append(answer)
        return answer

    async def sign_in(
        self, login: str, change: Callable[[str], str] | None = None, query: str = ""
    ) -> httpx.Response:
        """Through the provider as ``login``; ``change`` alters the authorization request
        (going to the provider by hand) or, with ``back=True``, the way back."""
        url = await self.start(query)
        async with httpx.AsyncClient() as browser:
            location = await sign_in_at_provider(
                browser, change(url) if change else url, login, PUBLIC
            )
        return await self.back(location)

    def assert_nothing_leaked(self, caplog: pytest.LogCaptureFixture) -> None:
        for answer in self.answers:
            shown = answer.text + str(answer.headers)
            assert CLIENT_SECRET not in shown
            for code in self.codes:
                assert code not in shown
        for code in self.codes:
            assert code not in caplog.text


@pytest.fixture
def flow(client: httpx.AsyncClient) -> Flow:
    return Flow(client)


def with_query(url: str, **changed: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()} | changed
    return urlunsplit(parts._replace(query=urlencode(query)))


async def account(runtime: Runtime, email: str) -> User | None:
    async with runtime.db.sessionmaker() as session:
        return await session.scalar(select(User).where(User.email == email))


async def events(runtime: Runtime, kind: str) -> list[AuditEvent]:
    async with runtime.db.sessionmaker() as session:
        found = await session.scalars(select(AuditEvent).where(AuditEvent.kind == kind))
        return list(found.all())


def refused(answer: httpx.Response, status: int, words: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert words in answer.text
    assert "upwatch_session" not in answer.headers.get("set-cookie", "")


async def test_the_sign_in_page_offers_single_sign_on_by_its_name(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/app/login")
    assert "Sign in with Example ID" in page.text
    assert 'href="/app/sso"' in page.text


async def test_a_new_person_signs_in_through_the_provider_and_gets_an_account_without_a_password(
    flow: Flow, client: httpx.AsyncClient, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    done = await flow.sign_in("alice")
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/app/dashboard"
    dashboard = await client.get("/app/dashboard")
    assert dashboard.status_code == 200
    assert "alice@example.com" in dashboard.text

    alice = await account(runtime, "alice@example.com")
    assert alice is not None
    assert alice.provider == "oidc"
    assert alice.provider_id == f"alice@{runtime.settings.oidc_issuer}"
    assert alice.password_hash is None
    assert alice.is_email_verified
    assert alice.first_name == "alice"
    assert "admin" not in alice.roles
    # Without a password the API's password login has nothing to check.
    assert (await log_in(client, "alice@example.com")).status_code == 401

    succeeded = await events(runtime, "sign_in.succeeded")
    assert [(e.actor_id, e.account_id, e.via, e.details) for e in succeeded] == [
        (alice.id, alice.id, "oidc", {"method": "oidc"})
    ]
    flow.assert_nothing_leaked(caplog)


async def test_a_second_sign_in_reaches_the_same_account(
    client: httpx.AsyncClient, runtime: Runtime, openid: OpenIdServer
) -> None:
    first = await Flow(client).sign_in("bob")
    assert first.status_code == 303, "".join(openid.output[-6:])
    client.cookies.clear()
    second = await Flow(client).sign_in("bob")
    assert second.status_code == 303, second.text
    async with runtime.db.sessionmaker() as session:
        found = (await session.scalars(select(User).where(User.email == "bob@example.com"))).all()
    assert len(found) == 1


@pytest.mark.parametrize(
    ("wanted", "landing"),
    [
        ("/app/monitors", "/app/monitors"),
        ("https://evil.example/app/x", "/app/dashboard"),
        ("//evil.example", "/app/dashboard"),
    ],
)
async def test_the_page_asked_for_before_the_sign_in_is_reached_after_it_if_it_is_the_consoles(
    client: httpx.AsyncClient, wanted: str, landing: str
) -> None:
    done = await Flow(client).sign_in("xavier", query=f"?{urlencode({'next': wanted})}")
    assert done.status_code == 303, done.text
    assert done.headers["location"] == landing


async def test_an_account_with_a_second_factor_is_asked_for_it_after_the_provider(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    assert (await Flow(client).sign_in("yara")).status_code == 303
    async with runtime.db.sessionmaker() as session:
        yara = await session.scalar(select(User).where(User.email == "yara@example.com"))
        assert yara is not None
        yara.totp_enabled_at = runtime.clock.now()
        await session.commit()
    client.cookies.clear()
    pending = await Flow(client).sign_in("yara", query="?next=/app/monitors")
    assert pending.status_code == 303, pending.text
    assert pending.headers["location"] == "/app/login/second-factor?next=%2Fapp%2Fmonitors"
    cookies = pending.headers.get_list("set-cookie")
    assert any(c.startswith("upwatch_pending=") for c in cookies)
    assert not any(c.startswith("upwatch_session=") for c in cookies)


async def test_a_password_account_with_the_same_verified_e_mail_is_linked_and_keeps_its_password(
    flow: Flow, client: httpx.AsyncClient, runtime: Runtime, sign_up: SignUp
) -> None:
    carol = await sign_up("carol@example.com")
    done = await flow.sign_in("carol")
    assert done.status_code == 303, done.text
    linked = await account(runtime, "carol@example.com")
    assert linked is not None
    assert linked.id == carol.id
    assert linked.provider_id == f"carol@{runtime.settings.oidc_issuer}"
    assert linked.is_email_verified
    assert (await log_in(client, "carol@example.com")).status_code == 200
    assert [e.account_id for e in await events(runtime, "sso.linked")] == [carol.id]


async def test_another_subject_with_a_linked_accounts_e_mail_is_refused(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    assert (await Flow(client).sign_in("dave")).status_code == 303
    client.cookies.clear()
    other = await Flow(client).sign_in("dave~2")
    refused(other, 403, "linked to another sign-in")
    failed = await events(runtime, "sign_in.failed")
    assert [e.details for e in failed] == [{"method": "oidc", "reason": "linked_elsewhere"}]


async def test_a_forged_state_is_refused_before_the_code_is_redeemed(
    flow: Flow, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    url = await flow.start()
    async with httpx.AsyncClient() as browser:
        location = await sign_in_at_provider(browser, url, "mallory", PUBLIC)
    forged = await flow.back(with_query(location, state="forged-state-of-the-attacker"))
    refused(forged, 400, "not the one this browser began")
    assert await account(runtime, "mallory@example.com") is None
    failed = await events(runtime, "sign_in.failed")
    assert [e.details for e in failed] == [{"method": "oidc", "reason": "state"}]
    flow.assert_nothing_leaked(caplog)


async def test_a_callback_in_a_browser_that_began_no_sign_in_is_refused(
    flow: Flow, client: httpx.AsyncClient
) -> None:
    url = await flow.start()
    async with httpx.AsyncClient() as browser:
        location = await sign_in_at_provider(browser, url, "mallory", PUBLIC)
    client.cookies.clear()
    refused(await flow.back(location), 400, "began in another browser")
    client.cookies.set("upwatch_sso", "not-a-sealed-flow", domain="upwatch.test", path="/app")
    refused(await flow.back(location), 400, "began in another browser")


async def test_a_wrong_nonce_in_the_id_token_is_refused(
    flow: Flow, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    # The same state as the cookie's, but the provider is asked for another nonce: the ID
    # token it signs carries that one.
    done = await flow.sign_in("oscar", lambda url: with_query(url, nonce="another-nonce"))
    refused(done, 400, "not for this sign-in")
    assert await account(runtime, "oscar@example.com") is None
    failed = await events(runtime, "sign_in.failed")
    assert [e.details for e in failed] == [{"method": "oidc", "reason": "nonce"}]
    flow.assert_nothing_leaked(caplog)


async def test_an_unverified_e_mail_is_refused_and_makes_no_account(
    flow: Flow, runtime: Runtime, sign_up: SignUp, caplog: pytest.LogCaptureFixture
) -> None:
    done = await flow.sign_in("unverified-erin")
    refused(done, 403, "not verified your e-mail address")
    assert await account(runtime, "unverified-erin@example.com") is None
    # Nor does it take over a password account of that address.
    await sign_up("unverified-fay@example.com")
    taken = await Flow(flow.client).sign_in("unverified-fay")
    refused(taken, 403, "not verified")
    fay = await account(runtime, "unverified-fay@example.com")
    assert fay is not None
    assert fay.provider is None
    flow.assert_nothing_leaked(caplog)


async def test_a_sign_in_cancelled_at_the_provider_is_refused_politely(flow: Flow) -> None:
    url = await flow.start()
    async with httpx.AsyncClient() as browser:
        location = await cancel_at_provider(browser, url, PUBLIC)
    assert "error=access_denied" in location
    refused(await flow.back(location), 400, "cancelled at the provider")


async def test_a_code_used_twice_is_refused(flow: Flow, client: httpx.AsyncClient) -> None:
    url = await flow.start()
    async with httpx.AsyncClient() as browser:
        location = await sign_in_at_provider(browser, url, "quinn", PUBLIC)
    cookie = client.cookies.get("upwatch_sso")
    assert (await flow.back(location)).status_code == 303
    client.cookies.clear()
    client.cookies.set("upwatch_sso", cookie or "", domain="upwatch.test", path="/app")
    refused(await flow.back(location), 400, "could not be completed")


async def test_a_rotated_signing_key_is_fetched_when_an_id_token_names_it(
    client: httpx.AsyncClient, openid: OpenIdServer
) -> None:
    assert (await Flow(client).sign_in("wendy")).status_code == 303
    # The same issuer with a new key: the key set cached at the first sign-in lacks it.
    openid.restart()
    client.cookies.clear()
    again = await Flow(client).sign_in("wendy")
    assert again.status_code == 303, "".join(openid.output[-6:])


@pytest.mark.parametrize(
    "query",
    [
        "",
        "code=x",
        "state=&code=",
        "error=server_error&error_description=%3Cscript%3E",
        "state=" + "s" * 10_000 + "&code=" + "c" * 10_000,
        "code=%00%ff&state=%E2%82",
    ],
)
async def test_any_callback_without_its_flow_is_a_page_not_a_500(
    client: httpx.AsyncClient, query: str
) -> None:
    answer = await client.get(f"/app/sso/callback?{query}")
    assert answer.status_code == 400, answer.text
    assert "<script>" not in answer.text


async def test_a_flood_of_made_up_callbacks_is_throttled_and_leaves_a_bounded_trail(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    allowed = runtime.settings.login_failures_allowed
    for _ in range(allowed):
        refused(await client.get("/app/sso/callback?code=x&state=y"), 400, "start again")
    refused(await client.get("/app/sso/callback?code=x&state=y"), 429, "Too many")
    assert len(await events(runtime, "sign_in.failed")) == allowed


@pytest.mark.parametrize("signup", ["closed"])
async def test_a_closed_service_refuses_a_new_account_but_signs_in_a_linked_one(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    refused(await Flow(client).sign_in("rita"), 403, "does not create accounts")
    assert await account(runtime, "rita@example.com") is None

    headers = await admin_headers(client, runtime)
    made = await client.post(
        "/users", headers=headers, json={"email": "sam@example.com", "password": PASSWORD}
    )
    assert made.status_code == 201, made.text
    client.cookies.clear()
    done = await Flow(client).sign_in("sam")
    assert done.status_code == 303, done.text


@pytest.mark.parametrize("signup", ["sso"])
async def test_an_sso_only_service_refuses_password_sign_up_and_creates_accounts_by_sso(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    api = await client.post("/auth/signup", json={"email": "tom@example.com", "password": PASSWORD})
    problem = assert_problem(api, 403)
    assert problem["type"] == SIGNUP_CLOSED
    assert "single sign-on" in problem["detail"]

    form = await client.get("/app/signup")
    assert "Sign in with Example ID" in form.text
    page = await submit(
        client, "/app/signup", csrf_of(form), email="tom@example.com", password=PASSWORD
    )
    assert page.status_code == 403
    assert "single sign-on" in page.text
    assert await account(runtime, "tom@example.com") is None

    done = await Flow(client).sign_in("tom")
    assert done.status_code == 303, done.text
    assert await account(runtime, "tom@example.com") is not None


async def test_the_admin_claim_grants_the_administrator_role_and_its_absence_takes_it_back(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    assert (await Flow(client).sign_in("admin-uma")).status_code == 303
    uma = await account(runtime, "admin-uma@example.com")
    assert uma is not None
    assert "admin" in uma.roles
    assert (await client.get("/app/admin")).status_code == 200

    client.cookies.clear()
    assert (await Flow(client).sign_in("victor")).status_code == 303
    async with runtime.db.sessionmaker() as session:
        victor = await session.scalar(select(User).where(User.email == "victor@example.com"))
        assert victor is not None
        victor.roles = ["user", "admin"]
        await session.commit()
    client.cookies.clear()
    assert (await Flow(client).sign_in("victor")).status_code == 303
    again = await account(runtime, "victor@example.com")
    assert again is not None
    assert again.roles == ["user"]


@pytest.mark.parametrize("settings_overrides", [{}])
async def test_without_a_provider_there_is_no_button_and_the_routes_answer_404(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/app/login")
    assert "/app/sso" not in page.text
    assert (await client.get("/app/sso")).status_code == 404
    assert (await client.get("/app/sso/callback?code=x&state=y")).status_code == 404


@pytest.mark.parametrize(
    "settings_overrides",
    [
        {
            "oidc_issuer": f"http://127.0.0.1:{free_port()}",
            "oidc_client_id": CLIENT_ID,
            "oidc_client_secret": CLIENT_SECRET,
        }
    ],
)
async def test_an_unreachable_provider_is_a_502_page(client: httpx.AsyncClient) -> None:
    answer = await client.get("/app/sso")
    assert answer.status_code == 502
    assert "cannot be reached" in answer.text
    assert CLIENT_SECRET not in answer.text


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"signup": "sso"}, "UPWATCH_SIGNUP=sso needs UPWATCH_OIDC_ISSUER"),
        ({"oidc_issuer": "https://id.example.com"}, "needs UPWATCH_OIDC_CLIENT_ID"),
        ({"oidc_issuer": "id.example.com", "oidc_client_id": "u"}, "https:// \\(or http://\\) URL"),
        (
            {
                "oidc_issuer": "https://id.example.com",
                "oidc_client_id": "u",
                "oidc_scopes": "email",
            },
            "must include openid",
        ),
        ({"oidc_admin_claim": "groups"}, "oidc_admin_claim"),
    ],
)
def test_single_sign_on_settings_that_cannot_work_are_refused_at_start(
    values: dict[str, str], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        Settings(_env_file=None, **values)  # type: ignore[call-arg]
