"""The console's pages beyond monitors and incidents: notification providers (with a real
test message over SMTP), status pages and their component editor, maintenance windows, plan
and usage, the visitor's settings and time zone, and the operators' pages."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast, Mailbox
from tests.console.forms import signed_in, submit
from tests.factories import create_monitor
from upwatch.kit.clock import ManualClock

ZONE_TOKYO = ZoneInfo("Asia/Tokyo")


settings_overrides = overriding(allow_private_targets=True)


async def unchecked_monitor(client: httpx.AsyncClient, cast: Cast, name: str) -> dict[str, Any]:
    """Alice's monitor of a closed local port, due only in five minutes."""
    return await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        name=name,
        url="http://127.0.0.1:9/",
        intervalSeconds=300,
    )


async def test_a_provider_is_added_tested_over_real_smtp_and_deleted(
    client: httpx.AsyncClient, cast: Cast, mailbox: Mailbox
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    form = await client.get("/app/notifications/new?type=email")
    assert 'name="config.to"' in form.text
    on_call = {"type": "email", "projectId": cast.project_id, "name": "On call"}
    refused = await submit(client, "/app/notifications/new", csrf, **on_call)
    assert refused.status_code == 422
    assert 'id="e-config.to"' in refused.text  # the API's error, next to its field
    to = {"config.to": "oncall@example.com, lead@example.com"}
    made = await submit(client, "/app/notifications/new", csrf, **on_call, **to)
    assert made.status_code == 303, made.text
    listed = await client.get("/app/notifications")
    assert "oncall@example.com, lead@example.com" in listed.text
    provider_id = re.search(r"/app/notifications/(\w+)/test", listed.text)
    assert provider_id
    tested = await submit(client, f"/app/notifications/{provider_id.group(1)}/test", csrf)
    assert tested.status_code == 303
    await mailbox.wait_for("oncall@example.com")
    assert "Test message sent." in (await client.get("/app/notifications")).text

    charlie = httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))
    async with charlie:
        other = await signed_in(charlie, cast.charlie.email)
        assert "On call" not in (await charlie.get("/app/notifications")).text
        walled = await charlie.post(
            f"/app/notifications/{provider_id.group(1)}/delete", data={"csrf": other}
        )
        assert walled.status_code == 404

    deleted = await submit(client, f"/app/notifications/{provider_id.group(1)}/delete", csrf)
    assert deleted.status_code == 303
    assert "On call" not in (await client.get("/app/notifications")).text


async def test_a_refused_provider_form_never_shows_the_secret_again(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    token = "123456:" + "s3cr3t" * 6
    config = {"config.botToken": token, "config.chatId": "not a chat"}
    refused = await submit(
        client,
        "/app/notifications/new",
        csrf,
        type="telegram",
        projectId=cast.project_id,
        name="Chat",
        **config,
    )
    assert refused.status_code == 422
    assert 'id="e-config.chatId"' in refused.text
    assert token not in refused.text
    assert 'value="Chat"' in refused.text  # the rest of the form is kept
    hook = "https://hooks.slack.com/services/T000/B000/s3cr3tpath"
    slack = await submit(
        client,
        "/app/notifications/new",
        csrf,
        type="slack",
        projectId=cast.project_id,
        name="",  # refused, for its name
        **{"config.webhookUrl": hook},
    )
    assert slack.status_code == 422
    assert hook not in slack.text  # a chat hook's URL is its secret, as the API masks it


async def test_a_status_page_is_made_edited_and_previewed_while_private(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    first = await unchecked_monitor(client, cast, "API")
    await unchecked_monitor(client, cast, "Web")
    csrf = await signed_in(client, cast.alice.email)
    made = await submit(
        client,
        "/app/status-pages",
        csrf,
        projectId=cast.project_id,
        name="Shop status",
        slug="shop",
    )
    assert made.status_code == 303, made.text
    editor_url = made.headers["location"]
    bad = await submit(
        client,
        "/app/status-pages",
        csrf,
        projectId=cast.project_id,
        name="Again",
        slug="Not a slug",
    )
    assert bad.status_code == 422
    assert 'id="e-slug"' in bad.text
    for monitor_name in ("API", "Web"):
        editor = await client.get(editor_url)
        option = re.search(rf'<option value="(\w+)">{monitor_name}</option>', editor.text)
        assert option, editor.text
        added = await submit(client, f"{editor_url}/components", csrf, monitorId=option.group(1))
        assert added.status_code == 303, added.text
    editor = await client.get(editor_url)
    components = re.findall(rf'action="{editor_url}/components/(\w+)" class="rename"', editor.text)
    assert len(components) == 2
    moved = await submit(client, f"{editor_url}/components/{components[1]}", csrf, action="up")
    assert moved.status_code == 303
    renamed = await submit(
        client, f"{editor_url}/components/{components[1]}", csrf, action="rename", name="Website"
    )
    assert renamed.status_code == 303
    message = await submit(client, f"{editor_url}/message", csrf, message="Deploying at noon.")
    assert message.status_code == 303
    api = (
        await client.get(
            f"/status-pages/{editor_url.rsplit('/', 1)[1]}", headers=cast.alice.headers
        )
    ).json()
    assert [c["name"] for c in api["components"]] == ["Website", "API"]
    assert first["id"] in [c["monitorId"] for c in api["components"]]

    private = await client.get(f"{editor_url}")
    assert "/preview" in private.text
    made_private = await client.patch(
        f"/status-pages/{api['id']}", headers=cast.alice.headers, json={"isPublic": False}
    )
    assert made_private.status_code == 200
    assert (await client.get("/s/shop")).status_code == 404
    preview = await client.get(f"{editor_url}/preview")
    assert preview.status_code == 200
    assert "Website" in preview.text
    assert "Deploying at noon." in preview.text
    assert "script-src 'self'" in preview.headers["content-security-policy"]

    charlie = httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))
    async with charlie:
        await signed_in(charlie, cast.charlie.email)
        assert (await charlie.get(f"{editor_url}/preview")).status_code == 404
    deleted = await submit(client, f"{editor_url}/delete", csrf)
    assert deleted.headers["location"] == "/app/status-pages"


async def test_a_maintenance_window_is_planned_in_the_visitors_time_zone(
    client: httpx.AsyncClient, cast: Cast, clock: ManualClock
) -> None:
    monitor = await unchecked_monitor(client, cast, "API")
    csrf = await signed_in(client, cast.alice.email)
    saved = await submit(
        client, "/app/settings", csrf, firstName="Alice", lastName="Liddell", timezone="Asia/Tokyo"
    )
    assert saved.status_code == 303
    start = (
        (clock.now() + timedelta(days=1)).astimezone(ZONE_TOKYO).replace(second=0, microsecond=0)
    )
    end = start + timedelta(hours=2)
    window = {"projectId": cast.project_id, "title": "Upgrade", "timezone": "Asia/Tokyo"}
    typed_start, typed_end = start.strftime("%Y-%m-%dT%H:%M"), end.strftime("%Y-%m-%dT%H:%M")
    backwards = await submit(
        client, "/app/maintenance", csrf, **window, startsAt=typed_end, endsAt=typed_start
    )
    assert backwards.status_code == 422
    assert "field-error" in backwards.text
    planned = await submit(
        client,
        "/app/maintenance",
        csrf,
        **window,
        startsAt=typed_start,
        endsAt=typed_end,
        monitorIds=monitor["id"],
    )
    assert planned.status_code == 303, planned.text
    windows = (await client.get("/maintenance-windows", headers=cast.alice.headers)).json()
    assert windows[0]["monitorIds"] == [monitor["id"]]
    listed = await client.get("/app/maintenance")
    assert start.strftime("%Y-%m-%d %H:%M:00 JST") in listed.text  # shown as it was typed
    window_id = re.search(r"/app/maintenance/(\w+)/delete", listed.text)
    assert window_id
    await submit(client, f"/app/maintenance/{window_id.group(1)}/delete", csrf)
    assert "Upgrade" not in (await client.get("/app/maintenance")).text


async def test_settings_name_a_bad_time_zone_and_the_plan_page_upgrades(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    wrong = await submit(client, "/app/settings", csrf, firstName="A", timezone="Mars/Olympus")
    assert wrong.status_code == 422
    assert 'id="e-timezone"' in wrong.text
    plan = await client.get("/app/plan")
    assert "<strong>free</strong>" in plan.text
    assert "Upgrade to pro" in plan.text
    upgraded = await submit(client, "/app/plan/upgrade", csrf)
    assert upgraded.status_code == 303
    after = await client.get("/app/plan")
    assert "You are on the pro plan now." in after.text
    again = await submit(client, "/app/plan/upgrade", csrf)
    assert "Plan not changed" in (await client.get(again.headers["location"])).text


async def test_only_administrators_reach_the_operators_pages(
    client: httpx.AsyncClient, cast: Cast, make_admin: Any, mailbox: Mailbox
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    assert (await client.get("/app/admin/users")).status_code == 404
    assert (await client.get("/app/admin/contact")).status_code == 404
    refused = await submit(client, f"/app/admin/users/{cast.bob.id}", csrf, plan="pro")
    assert refused.status_code == 404
    assert ">Admin<" not in (await client.get("/app/monitors")).text

    await make_admin(cast.alice)
    before = len(mailbox.to(cast.alice.email))
    sent = await client.post(
        "/contact",
        json={"name": "Dana", "email": "dana@example.com", "subject": "Pricing", "message": "Hi"},
    )
    assert sent.status_code == 201, sent.text
    await mailbox.wait_for(cast.alice.email, before + 1)
    body = mailbox.to(cast.alice.email)[-1].get_payload(decode=True)
    assert isinstance(body, bytes)
    link = re.search(r"http://[^/]+(/contact/\w+)", body.decode())
    assert link, body
    api_client = await client.get(link.group(1))
    assert api_client.status_code == 405  # the API path: only PATCH, for all but browsers
    followed = await client.get(link.group(1), headers={"Accept": "text/html,*/*;q=0.8"})
    assert followed.status_code == 303
    submission = await client.get(followed.headers["location"])
    assert "Pricing" in submission.text
    saved = await submit(
        client, followed.headers["location"], csrf, contacted="on", notes="Called."
    )
    assert saved.status_code == 303
    assert "Called." in (await client.get(followed.headers["location"])).text

    users = await client.get("/app/admin/users")
    assert cast.bob.email in users.text
    changed = await submit(client, f"/app/admin/users/{cast.bob.id}", csrf, plan="pro")
    assert changed.status_code == 303
    bob = await client.get("/subscriptions/current", headers=cast.bob.headers)
    assert bob.json()["currentPlan"] == "pro"
