"""The web console over HTTP, as a browser would use it: sessions in cookies under the API's
token rules, a CSRF token on every form that changes state, errors next to their fields, the
tenant walls, and the bearer API unmoved by cookies. (The browser itself: test_browser.py.)"""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import PASSWORD, Cast, InProject, Mailbox
from tests.console.forms import csrf_of, signed_in, submit
from tests.factories import Target, change_profile, ingest
from upwatch.console.render import POLICY
from upwatch.kit.clock import ManualClock

settings_overrides = overriding(allow_private_targets=True)

# The new-monitor form's fields for a TCP monitor of a closed local port, checked every 5 minutes.
TCP = {"type": "tcp", "host": "127.0.0.1", "port": "9", "intervalSeconds": "300"}


async def test_signing_in_sets_an_http_only_lax_session_cookie(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    assert (await client.get("/app")).headers["location"] == "/app/login"
    asked = await client.get("/app/monitors")
    assert asked.headers["location"] == "/app/login?next=%2Fapp%2Fmonitors"
    form = await client.get("/app/login")
    assert form.status_code == 200
    assert "script-src 'self'" in form.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in form.headers["content-security-policy"]
    done = await submit(
        client, "/app/login", csrf_of(form), email=cast.alice.email, password=PASSWORD
    )
    cookie = next(h for h in done.headers.get_list("set-cookie") if "upwatch_session=" in h)
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Path=/app" in cookie
    listed = await client.get("/app/monitors")
    assert listed.status_code == 200
    assert cast.alice.email in listed.text


async def test_signing_in_returns_to_the_console_page_asked_for_and_nowhere_else(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    for wanted, landing in (
        ("/app/incidents", "/app/incidents"),
        ("//evil.example/app/", "/app/dashboard"),
        ("https://evil.example/", "/app/dashboard"),
        ("/app/\\evil.example", "/app/dashboard"),
        ("/app/../s/evil", "/app/dashboard"),
        ("/app/%2e%2e/s/evil", "/app/dashboard"),
        ("/app/incidents?x=//evil.example", "/app/dashboard"),
    ):
        client.cookies.clear()
        form = await client.get("/app/login", params={"next": wanted})
        done = await submit(
            client,
            "/app/login",
            csrf_of(form),
            email=cast.alice.email,
            password=PASSWORD,
            next=wanted,
        )
        assert done.headers["location"] == landing, wanted


async def test_names_in_any_script_and_odd_tokens_get_pages_not_errors(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    made = await submit(
        client, "/app/monitors/new", csrf, projectId=cast.project_id, name="监控 Überwachung", **TCP
    )
    assert made.status_code == 303, made.text
    page = await client.get(made.headers["location"])
    assert "Monitor 监控 Überwachung created." in page.text
    odd = await submit(client, "/app/projects", "jeton-ünïcode-监控", name="X")
    assert odd.status_code == 403


async def test_a_wrong_password_is_named_on_the_form_and_signs_no_one_in(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    form = await client.get("/app/login")
    wrong = await submit(
        client, "/app/login", csrf_of(form), email=cast.alice.email, password="not it at all"
    )
    assert wrong.status_code == 401
    assert "the e-mail or password is wrong" in wrong.text
    assert "upwatch_session=" not in " ".join(wrong.headers.get_list("set-cookie"))


async def test_a_form_without_its_csrf_token_is_refused(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    login_page = await client.get("/app/login")
    assert csrf_of(login_page)
    no_token = await client.post(
        "/app/login", data={"email": cast.alice.email, "password": PASSWORD}
    )
    assert no_token.status_code == 403
    await signed_in(client, cast.alice.email)
    for path in ("/app/projects", "/app/monitors/new", "/app/logout"):
        refused = await submit(client, path, "forged", name="Sneaky")
        assert refused.status_code == 403, path
        assert "The form has expired" in refused.text
    projects = (await client.get("/projects", headers=cast.alice.headers)).json()
    assert "Sneaky" not in [p["name"] for p in projects]


async def test_the_bearer_api_never_accepts_the_session_cookie(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await signed_in(client, cast.alice.email)
    assert "upwatch_session" in client.cookies
    api = await client.get("/projects")
    assert api.status_code == 401


async def test_a_session_ends_at_sign_out_and_with_a_password_change(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    token = client.cookies["upwatch_session"]
    out = await submit(client, "/app/logout", csrf)
    assert out.headers["location"] == "/app/login"
    client.cookies.set("upwatch_session", token, path="/app")  # a copy kept by a thief
    assert (await client.get("/app/monitors")).status_code == 303

    client.cookies.clear()
    await signed_in(client, cast.bob.email)
    changed = await change_profile(client, cast.bob, password="a brand new passphrase")
    assert changed.status_code == 200, changed.text
    assert (await client.get("/app/monitors")).status_code == 303


async def test_a_monitor_made_in_the_console_is_listed_checked_and_walled_off(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    refused = await submit(
        client, "/app/monitors/new", csrf, projectId=cast.project_id, name="", type="http", url="x"
    )
    assert refused.status_code == 422
    assert 'class="field-error" id="e-url"' in refused.text  # next to its field
    made = await submit(
        client, "/app/monitors/new", csrf, projectId=cast.project_id, name="Checkout", **TCP
    )
    assert made.status_code == 303, made.text
    page_url = made.headers["location"]
    page = await client.get(page_url)
    assert "Monitor Checkout created." in page.text
    assert "<h1>Checkout</h1>" in page.text
    checked = await submit(client, f"{page_url}/check", csrf)
    assert checked.status_code == 303
    after = await client.get(page_url)
    assert "Checked now: down" in after.text
    rows = await client.get("/app/monitors/rows?sort=status")
    assert "Checkout" in rows.text
    assert "<html" not in rows.text  # a fragment for the live refresh

    charlie = httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))
    async with charlie:
        await signed_in(charlie, cast.charlie.email)
        hidden = await charlie.get(page_url)
        assert hidden.status_code == 404
        assert "Checkout" not in hidden.text
        assert "Checkout" not in (await charlie.get("/app/monitors")).text


async def test_a_monitor_page_charts_its_response_times_and_the_list_draws_sparklines(
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    clock: ManualClock,
    target: Target,
    as_alice: InProject,
) -> None:
    monitor = await as_alice.monitor(name="Checkout", url=target.url, intervalSeconds=300)
    now = clock.now()
    # A failed check two days ago, then the last half hour's, in the order they were made.
    await ingest(app.state.engine, monitor["id"], now - timedelta(days=2), False)
    for n in reversed(range(30)):
        await ingest(app.state.engine, monitor["id"], now - timedelta(minutes=n), True, 20.0 + n)
    await signed_in(client, cast.alice.email)

    day = await client.get(f"/app/monitors/{monitor['id']}")
    assert day.status_code == 200
    assert 'aria-current="true">24h<' in day.text
    assert re.search(r'<path class="p95" d="M[0-9.]+,[0-9.]+', day.text)
    assert "Median response time from" in day.text
    assert "over 24 hours" in day.text
    regions = day.text[day.text.index("Regions, last 24 hours") :]
    assert "(local)" in regions
    assert "<td>30</td>" in regions  # the last day's checks; the one of two days ago is out
    week = await client.get(f"/app/monitors/{monitor['id']}?range=7d")
    assert 'aria-current="true">7d<' in week.text
    assert "over 7 days" in week.text
    assert week.text.count("<rect") == 90
    assert "major_outage" in week.text  # the day of the failed check, in the bars
    odd = await client.get(f"/app/monitors/{monitor['id']}?range=forever")
    assert 'aria-current="true">24h<' in odd.text

    assert "<dt>Certificate</dt>" not in day.text  # no check read one

    rows = await client.get("/app/monitors/rows")
    points = re.search(r'<polyline points="([^"]+)"', rows.text)
    assert points
    assert len(points.group(1).split()) == 20


async def test_an_incident_is_acknowledged_updated_and_resolved_from_the_console(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(
        type="tcp", host="127.0.0.1", port=9, intervalSeconds=300, url=None
    )
    opened = await as_alice.post("/incidents", monitorId=monitor["id"], title="Checkout down")
    incident = opened.json()["id"]
    csrf = await signed_in(client, cast.bob.email)
    listed = await client.get("/app/incidents")
    assert "Checkout down" in listed.text
    path = f"/app/incidents/{incident}"
    acked = await submit(client, f"{path}/acknowledge", csrf)
    assert acked.status_code == 303
    assert "Acknowledged." in (await client.get(path)).text
    again = await submit(client, f"{path}/acknowledge", csrf)
    assert again.status_code == 409
    assert "already acknowledged" in again.text
    empty = await submit(client, f"{path}/updates", csrf, message="")
    assert empty.status_code == 422
    assert 'id="e-message"' in empty.text
    posted = await submit(client, f"{path}/updates", csrf, message="Fixed a cable")
    assert posted.status_code == 303
    resolved = await submit(client, f"{path}/resolve", csrf)
    assert resolved.status_code == 303
    page = (await client.get(path)).text
    assert "Fixed a cable" in page
    assert "resolved" in page
    state = (await client.get(f"/incidents/{incident}", headers=cast.alice.headers)).json()
    assert state["status"] == "resolved"
    assert state["acknowledgedAt"] is not None


async def test_the_owner_invites_from_the_project_page_and_a_member_cannot(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    page = await client.get(f"/app/projects/{cast.project_id}")
    assert cast.bob.email in page.text
    assert "Invite a member" in page.text
    invited = await submit(
        client, f"/app/projects/{cast.project_id}/invite", csrf, email="newcomer@example.com"
    )
    assert invited.status_code == 303
    after = (await client.get(f"/app/projects/{cast.project_id}")).text
    assert "Invitation sent to newcomer@example.com." in after
    assert "newcomer@example.com</td><td>invited" in after
    twice = await submit(
        client, f"/app/projects/{cast.project_id}/invite", csrf, email="newcomer@example.com"
    )
    assert twice.status_code == 409
    assert "already invited" in twice.text

    client.cookies.clear()
    bob_csrf = await signed_in(client, cast.bob.email)
    assert "Invite a member" not in (await client.get(f"/app/projects/{cast.project_id}")).text
    refused = await submit(
        client, f"/app/projects/{cast.project_id}/invite", bob_csrf, email="friend@example.com"
    )
    assert refused.status_code == 403
    assert "only the owner" in refused.text


async def test_the_reset_link_mailed_opens_a_console_form_that_sets_the_password(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox
) -> None:
    forgot = await client.get("/app/forgot-password")
    sent = await submit(client, "/app/forgot-password", csrf_of(forgot), email=cast.alice.email)
    assert sent.headers["location"] == "/app/login"
    await mailbox.wait_for(cast.alice.email)
    token = mailbox.reset_token(cast.alice.email)
    link = await client.get(f"/reset-password?token={token}")  # the path the e-mail gives
    assert link.status_code == 303
    form = await client.get(link.headers["location"])
    assert f'name="token" value="{token}"' in form.text
    short = await submit(client, "/app/reset-password", csrf_of(form), token=token, password="x")
    assert short.status_code == 422
    assert 'id="e-password"' in short.text
    done = await submit(
        client, "/app/reset-password", csrf_of(form), token=token, password="a long new passphrase"
    )
    assert done.headers["location"] == "/app/login"
    again = await submit(
        client, "/app/reset-password", csrf_of(form), token=token, password="another passphrase!"
    )
    assert again.status_code == 400  # used once
    await signed_in(client, cast.alice.email, "a long new passphrase")


async def test_the_invitation_link_mailed_lets_the_invitee_sign_up_and_join(
    client: httpx.AsyncClient, mailbox: Mailbox, as_alice: InProject
) -> None:
    invited = await as_alice.invite("dana@example.com")
    assert invited.status_code == 201, invited.text
    await mailbox.wait_for("dana@example.com")
    token = mailbox.invitation_token("dana@example.com")
    link = await client.get(f"/invitations/accept?token={token}")
    page = await client.get(link.headers["location"])
    assert "Sign up and join" in page.text
    signup_form = await client.get(f"/app/signup?invitation={token}")
    assert f'name="invitation" value="{token}"' in signup_form.text
    joined = await submit(
        client,
        "/app/signup",
        csrf_of(signup_form),
        invitation=token,
        email="dana@example.com",
        password="dana's own passphrase",
    )
    assert joined.status_code == 303, joined.text
    projects = await client.get("/app/projects")
    assert "Welcome to Upwatch. You joined Shop." in projects.text
    assert "Shop" in projects.text


async def test_incident_links_of_alerts_sent_before_the_console_open_its_incident_page(
    client: httpx.AsyncClient,
) -> None:
    earlier = await client.get("/docs?incident=inc42#/incidents/getIncident")
    assert earlier.status_code == 303
    assert earlier.headers["location"] == "/app/incidents/inc42"
    odd = await client.get("/docs", params={"incident": "../x?y"})
    assert odd.headers["location"] == "/app/incidents/..%2Fx%3Fy"
    assert (await client.get("/docs")).status_code == 200  # the API document as before


async def test_every_console_answer_fragments_included_carries_the_consoles_strict_policy(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    # A fragment asked for without a session: an empty 401.
    assert (await client.get("/app/monitors/rows")).headers["content-security-policy"] == POLICY
    await signed_in(client, cast.alice.email)
    monitor = await as_alice.monitor(url="https://shop.example/", intervalSeconds=300)
    for path in (
        "/app/monitors/rows",
        "/app/incidents/rows",
        f"/app/monitors/{monitor['id']}/state",
        f"/app/monitors/{'0' * 32}/state",
        "/app/monitors",
        "/app",
        "/app/static/console.js",
        "/app/no-such-page",
    ):
        answer = await client.get(path)
        assert answer.headers["content-security-policy"] == POLICY, path
        assert "unsafe-inline" not in answer.headers["content-security-policy"]


async def test_a_monitor_page_names_the_days_its_certificate_has_left_from_the_newest_reading(
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    clock: ManualClock,
    target: Target,
    as_alice: InProject,
) -> None:
    monitor = await as_alice.monitor(name="Shop", url=target.url, intervalSeconds=300)
    now = clock.now()
    await ingest(app.state.engine, monitor["id"], now - timedelta(minutes=2), True, details={})
    await ingest(
        app.state.engine,
        monitor["id"],
        now - timedelta(minutes=1),
        True,
        details={"daysToExpiry": 9},
    )
    await ingest(app.state.engine, monitor["id"], now, False)
    await signed_in(client, cast.alice.email)

    page = await client.get(f"/app/monitors/{monitor['id']}")
    assert "<dt>Certificate</dt><dd>expires in 9 days</dd>" in page.text
    await ingest(
        app.state.engine,
        monitor["id"],
        now + timedelta(seconds=1),
        True,
        details={"daysToExpiry": -1},
    )
    state = await client.get(f"/app/monitors/{monitor['id']}/state")
    assert "expired 1 day ago" in state.text
