"""Private status pages: `public`, `password` and `members` visibility and the address
allowlist, on every route of a page (JSON, HTML, the custom domain, feeds, badges, the owner's
CSS and script, subscriptions). A refused answer says nothing of the page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Cast, assert_problem
from tests.factories import add_component, create_incident, create_monitor, create_page

settings_overrides = overriding(status_page_max_age_seconds=0, login_failures_allowed=3)

# What the page shows; none of it may appear in an answer that refuses the visitor.
SECRETS = ("Vault shop", "Hidden description", "Vault checkout", "Vault breach", "vault-css")
DOMAIN = "status.vault.example"
PASSWORD = "vault door 2026"
INSIDE = "203.0.113.0/24"  # the test client's address is 203.0.113.7
OUTSIDE = "198.51.100.0/24"


@dataclass(frozen=True)
class Page:
    id: str
    component_id: str


async def _secret_page(client: httpx.AsyncClient, cast: Cast, **fields: Any) -> Page:
    page = await create_page(
        client,
        cast.alice,
        cast.project_id,
        name="Vault shop",
        slug="vault",
        description="Hidden description",
        customDomain=DOMAIN,
        customCss="/* vault-css */",
        customJs="/* vault-css */",
        **fields,
    )
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        name="vault-backend",
        url="https://vault.example/",
        intervalSeconds=300,
    )
    component = await add_component(client, cast.alice, page["id"], monitor["id"])
    renamed = await client.patch(
        f"/status-pages/{page['id']}/components/{component['id']}",
        headers=cast.alice.headers,
        json={"name": "Vault checkout"},
    )
    assert renamed.status_code == 200, renamed.text
    await create_incident(
        client,
        cast.alice,
        cast.project_id,
        title="Vault breach",
        severity="high",
        monitorId=monitor["id"],
    )
    return Page(page["id"], component["id"])


# Every route of the page: (name, method, path, extra request arguments).
ROUTES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("json", "GET", "/status-pages/public/slug/vault", {}),
    ("html", "GET", "/s/vault", {}),
    ("domain", "GET", "/", {"headers": {"Host": DOMAIN}}),
    ("rss", "GET", "/s/vault/feed.rss", {}),
    ("atom", "GET", "/s/vault/feed.atom", {}),
    ("badge", "GET", "/s/vault/badge.svg", {}),
    ("uptime badge", "GET", "/s/vault/components/{component}/uptime.svg", {}),
    ("css", "GET", "/s/vault/custom.css", {}),
    ("js", "GET", "/s/vault/custom.js", {}),
    ("subscribe", "POST", "/status-pages/public/slug/vault/subscribe", {"json": {}}),
    ("subscribe form", "POST", "/s/vault/subscribe-form", {"content": b"email=x%40y.example"}),
]
PAGE_ROUTES = {"json", "html", "domain", "rss", "atom", "badge", "uptime badge", "css", "js"}


@dataclass(frozen=True)
class Case:
    name: str
    fields: dict[str, Any]
    # Who asks: "anonymous", "pass" (the password's cookie), "wrong pass", "bob" (a member's
    # token), "charlie" (a token of someone outside the project).
    who: str
    shown: bool  # the page's routes answer with the page
    form: bool = False  # HTML and the domain answer with the password form


LOCKED = {"visibility": "password", "password": PASSWORD}
MEMBERS = {"visibility": "members"}
CASES = [
    Case("public", {}, "anonymous", shown=True),
    Case("password without a pass", LOCKED, "anonymous", False, form=True),
    Case("password with its pass", LOCKED, "pass", True),
    Case("password with a wrong pass", LOCKED, "wrong pass", False, form=True),
    Case("password to a member", LOCKED, "bob", True),
    Case("members to an anonymous visitor", MEMBERS, "anonymous", False),
    Case("members to a member", MEMBERS, "bob", True),
    Case("members to someone of another project", MEMBERS, "charlie", False),
    Case("the seed's private page to the public", {"isPublic": False}, "anonymous", False),
    Case("public inside its allowlist", {"allowedNetworks": [INSIDE]}, "anonymous", True),
    Case("public outside its allowlist", {"allowedNetworks": [OUTSIDE]}, "anonymous", False),
    Case(
        "members outside its allowlist to a member",
        {**MEMBERS, "allowedNetworks": [OUTSIDE]},
        "bob",
        False,
    ),
]


async def _headers_of(
    client: httpx.AsyncClient, cast: Cast, page: Page, who: str
) -> dict[str, str]:
    if who == "bob":
        return cast.bob.headers
    if who == "charlie":
        return cast.charlie.headers
    if who == "wrong pass":
        return {"Cookie": f"upwatch_page_{page.id}={'0' * 64}"}
    if who == "pass":
        unlocked = await client.post(
            "/status-pages/public/slug/vault/unlock", json={"password": PASSWORD}
        )
        assert unlocked.status_code == 204, unlocked.text
        cookie = unlocked.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=lax" in cookie
        assert "Secure" not in cookie  # asked over http
        client.cookies.clear()  # sent by hand below, to every host alike
        return {"Cookie": cookie.split(";", 1)[0]}
    return {}


def _refused_says_nothing(response: httpx.Response) -> None:
    for secret in SECRETS:
        assert secret not in response.text, (response.request.url, secret)
    assert "etag" not in response.headers


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_every_route_of_a_page_obeys_its_visibility_and_allowlist(
    client: httpx.AsyncClient, cast: Cast, case: Case
) -> None:
    page = await _secret_page(client, cast, **case.fields)
    headers = await _headers_of(client, cast, page, case.who)
    restricted = bool(case.fields)
    # Only a public page takes subscribers (e-mail leaves its walls).
    public = case.fields.get("visibility", "public") == "public" and case.fields.get(
        "isPublic", True
    )
    for name, method, path, extra in ROUTES:
        sent = {**headers, **extra.get("headers", {})}
        kwargs = {k: v for k, v in extra.items() if k != "headers"}
        if name == "subscribe form":
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if name == "subscribe":
            kwargs = {"json": {"email": f"{case.who.replace(' ', '')}@visitor.example"}}
        url = path.format(component=page.component_id)
        response = await client.request(method, url, headers=sent, **kwargs)
        where = f"{case.name}: {name}"
        if name in PAGE_ROUTES and case.shown:
            assert response.status_code == 200, where
            if name in {"json", "html", "domain"}:
                assert "Vault shop" in response.text, where
            cache = response.headers["cache-control"]
            if restricted:
                assert cache == "private, no-store", where
                assert "etag" not in response.headers, where
            else:
                assert cache.startswith("public"), where
        elif name in PAGE_ROUTES and case.form and name in {"html", "domain"}:
            assert response.status_code == 401, where
            assert 'type="password"' in response.text, where
            assert response.headers["cache-control"] == "no-store", where
            _refused_says_nothing(response)
        elif name.startswith("subscribe") and case.shown and public:
            assert response.status_code in {200, 202}, where
        else:
            # Refused, and subscriptions of any page that is not public: exactly the answer
            # of a page that does not exist.
            missing = await client.request(
                method,
                url.replace("vault", "nowhere"),
                headers={k: v.replace(DOMAIN, "nowhere.example") for k, v in sent.items()},
                **kwargs,
            )
            assert assert_problem(response, 404) == assert_problem(missing, 404), where
            _refused_says_nothing(response)


async def test_a_restricted_page_is_never_answered_304_or_served_from_the_snapshot_cache(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    page = await _secret_page(client, cast, visibility="members")
    first = await client.get("/status-pages/public/slug/vault", headers=cast.bob.headers)
    assert first.status_code == 200
    assert "etag" not in first.headers
    # Even a tag of the page as it was public names nothing to an outsider.
    opened = await client.patch(
        f"/status-pages/{page.id}", headers=cast.alice.headers, json={"visibility": "public"}
    )
    tag = (await client.get("/status-pages/public/slug/vault")).headers["etag"]
    await client.patch(
        f"/status-pages/{page.id}", headers=cast.alice.headers, json={"visibility": "members"}
    )
    assert opened.status_code == 200
    for headers in ({}, cast.charlie.headers):
        answer = await client.get(
            "/status-pages/public/slug/vault", headers={**headers, "If-None-Match": tag}
        )
        assert_problem(answer, 404)
    member = await client.get(
        "/status-pages/public/slug/vault", headers={**cast.bob.headers, "If-None-Match": tag}
    )
    assert member.status_code == 200
    assert member.headers["cache-control"] == "private, no-store"


async def test_the_html_form_opens_a_password_page_and_a_new_password_closes_it_again(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    page = await _secret_page(client, cast, visibility="password", password=PASSWORD)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    wrong = await client.post("/s/vault/unlock", headers=form, content=b"password=nope")
    assert wrong.status_code == 401
    assert "not right" in wrong.text
    _refused_says_nothing(wrong)
    right = await client.post("/s/vault/unlock", headers=form, content=b"password=vault+door+2026")
    assert right.status_code == 303
    assert right.headers["location"] == "/s/vault"
    assert "Vault shop" in (await client.get("/s/vault")).text
    # On its custom domain, back to the domain's root.
    there = await client.post(
        "/s/vault/unlock",
        headers={**form, "Host": DOMAIN},
        content=b"password=vault+door+2026",
    )
    assert there.headers["location"] == "/"
    changed = await client.patch(
        f"/status-pages/{page.id}",
        headers=cast.alice.headers,
        json={"password": "a brand new one"},
    )
    assert changed.status_code == 200, changed.text
    again = await client.get("/s/vault")
    assert again.status_code == 401
    _refused_says_nothing(again)


async def test_wrong_passwords_are_throttled_per_client_address(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast
) -> None:
    await _secret_page(client, cast, visibility="password", password=PASSWORD)
    unlock = "/status-pages/public/slug/vault/unlock"
    for _ in range(3):  # login_failures_allowed
        assert_problem(await client.post(unlock, json={"password": "guessing"}), 401)
    throttled = await client.post(unlock, json={"password": PASSWORD})
    assert_problem(throttled, 429)
    assert int(throttled.headers["retry-after"]) > 0
    form = await client.post(
        "/s/vault/unlock",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        content=b"password=guessing",
    )
    assert form.status_code == 429
    _refused_says_nothing(form)
    # Another address is not held back by these guesses.
    elsewhere = await _client_at(app, "203.0.113.99")
    async with elsewhere:
        assert (await elsewhere.post(unlock, json={"password": PASSWORD})).status_code == 204


async def _client_at(app: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://upwatch.test")


async def test_the_allowlist_reads_the_client_address_and_an_outside_unlock_is_a_404(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast
) -> None:
    await _secret_page(
        client, cast, visibility="password", password=PASSWORD, allowedNetworks=["203.0.113.7"]
    )
    outside = await _client_at(app, "203.0.113.8")
    async with outside:
        answer = await outside.post(
            "/status-pages/public/slug/vault/unlock", json={"password": PASSWORD}
        )
        assert_problem(answer, 404)
        assert_problem(await outside.get("/s/vault"), 404)
    inside = await client.post(
        "/status-pages/public/slug/vault/unlock", json={"password": PASSWORD}
    )
    assert inside.status_code == 204


Owner = Callable[..., Awaitable[httpx.Response]]


@pytest.fixture
def owner(client: httpx.AsyncClient, cast: Cast) -> Owner:
    async def send(method: str, path: str, **body: Any) -> httpx.Response:
        return await client.request(method, path, headers=cast.alice.headers, json=body)

    return send


async def test_the_owner_sets_visibility_password_and_allowlist_and_never_reads_the_password(
    owner: Owner, cast: Cast
) -> None:
    made = await owner(
        "POST",
        "/status-pages",
        projectId=cast.project_id,
        name="Vault shop",
        slug="vault",
        visibility="password",
        password=PASSWORD,
        allowedNetworks=["10.1.2.3/8", "2001:db8::1"],
    )
    assert made.status_code == 201, made.text
    page = made.json()
    assert page["visibility"] == "password"
    assert page["isPublic"] is False
    assert page["hasPassword"] is True
    assert page["allowedNetworks"] == ["10.0.0.0/8", "2001:db8::1/128"]
    assert "password" not in page
    assert PASSWORD not in made.text
    assert "argon2" not in made.text
    # The seed's switch moves the visibility: true is public, false a members page.
    opened = await owner("PATCH", f"/status-pages/{page['id']}", isPublic=True)
    assert opened.json()["visibility"] == "public"
    closed = await owner("PATCH", f"/status-pages/{page['id']}", isPublic=False)
    assert closed.json()["visibility"] == "members"
    assert closed.json()["hasPassword"] is True  # kept for the next time it is a password page
    listed = await owner("GET", f"/status-pages?projectId={cast.project_id}")
    assert PASSWORD not in listed.text
    assert "argon2" not in listed.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"allowedNetworks": ["10.0.0.0/33"]}, "allowedNetworks"),
        ({"allowedNetworks": ["not a network"]}, "allowedNetworks"),
        ({"visibility": "password"}, "password"),
        ({"visibility": "secret"}, "visibility"),
        ({"visibility": "members", "isPublic": True}, "isPublic"),
        ({"password": "short"}, "password"),
    ],
)
async def test_a_bad_access_setting_is_a_422_naming_its_field(
    owner: Owner, cast: Cast, body: dict[str, Any], field: str
) -> None:
    sent = {"projectId": cast.project_id, "name": "Vault", "slug": "vault"}
    problem = assert_problem(await owner("POST", "/status-pages", **sent, **body), 422)
    assert field in str(problem), problem
    made = await owner("POST", "/status-pages", **sent)
    problem = assert_problem(
        await owner("PATCH", f"/status-pages/{made.json()['id']}", **body), 422
    )
    assert field in str(problem), problem


async def test_the_pass_is_a_secure_cookie_over_https_and_opens_the_page_there(
    app: FastAPI, client: httpx.AsyncClient, cast: Cast
) -> None:
    await _secret_page(client, cast, visibility="password", password=PASSWORD)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="https://upwatch.test") as https:
        unlocked = await https.post(
            "/status-pages/public/slug/vault/unlock", json={"password": PASSWORD}
        )
        assert unlocked.status_code == 204
        assert "Secure" in unlocked.headers["set-cookie"]
        page = await https.get("/status-pages/public/slug/vault")
        assert page.json()["name"] == "Vault shop"


async def test_an_api_key_of_the_project_reads_a_members_page_and_one_of_another_does_not(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await _secret_page(client, cast, visibility="members")
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "wall screen", "scope": "read"},
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    answer = await client.get("/status-pages/public/slug/vault", headers=key)
    assert answer.json()["name"] == "Vault shop"
    forged = {"Authorization": "Bearer upw_" + "x" * 40}
    assert_problem(await client.get("/status-pages/public/slug/vault", headers=forged), 404)


def test_a_pass_cookie_outside_ascii_is_a_wrong_pass_not_an_error() -> None:
    from upwatch.statuspages.access import holds_pass, pass_value

    right = pass_value("key", "page", "hash")
    assert holds_pass("key", "page", "hash", right)
    assert not holds_pass("key", "page", "hash", "é" * len(right))
    assert not holds_pass("key", "page", "hash", right[:-1] + "\udcff")
