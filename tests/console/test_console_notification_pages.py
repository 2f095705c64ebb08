"""The console's pages for a provider's edit form, escalation policies, a project's API keys,
the visitor's settings (theme, language, personal channels) and deleting one's account: each
acts through the API's own services, shows the API's errors next to their fields, answers 404
outside the visitor's projects, and refuses a form without its CSRF token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.app_settings import overriding
from tests.conftest import PASSWORD, Cast
from tests.console.forms import signed_in, submit

settings_overrides = overriding(allow_private_targets=True)

HOOK = "http://127.0.0.1:9/hooks/first-0123456789"
SIGNING = "signing-secret-0123456789"


@pytest.fixture
async def other(client: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """A second browser on the same console (its own cookies)."""
    async with httpx.AsyncClient(
        transport=client._transport, base_url=str(client.base_url)
    ) as second:
        yield second


async def provider(client: httpx.AsyncClient, cast: Cast, name: str = "Hook") -> dict[str, Any]:
    made = await client.post(
        "/notification-providers",
        headers=cast.alice.headers,
        json={
            "projectId": cast.project_id,
            "name": name,
            "type": "webhook",
            "config": {"url": HOOK, "secret": SIGNING},
        },
    )
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


async def read_provider(client: httpx.AsyncClient, cast: Cast, provider_id: str) -> Any:
    read = await client.get(f"/notification-providers/{provider_id}", headers=cast.alice.headers)
    assert read.status_code == 200, read.text
    return read.json()


EDIT = {
    "name": "Hook renamed",
    "config.url": "",
    "config.secret": "",
    "isEnabled": "false",
    "quietHoursStart": "22:00",
    "quietHoursEnd": "07:00",
    "repeatEveryMinutes": "30",
}


async def test_a_provider_is_edited_and_its_secrets_are_kept_when_left_blank(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    hook = await provider(client, cast)
    csrf = await signed_in(client, cast.alice.email)
    page = await client.get(f"/app/notifications/{hook['id']}")
    assert page.status_code == 200
    assert 'value="Hook"' in page.text
    assert SIGNING not in page.text
    assert HOOK not in page.text  # the URL is the webhook's secret too
    saved = await submit(client, f"/app/notifications/{hook['id']}", csrf, **EDIT)
    assert saved.status_code == 303, saved.text
    assert "Provider saved." in (await client.get(saved.headers["location"])).text
    after = await read_provider(client, cast, hook["id"])
    assert after["name"] == "Hook renamed"
    assert after["isEnabled"] is False
    assert (after["quietHoursStart"], after["quietHoursEnd"]) == ("22:00", "07:00")
    assert after["repeatEveryMinutes"] == 30
    assert after["config"] == hook["config"]  # the same secrets, masked the same
    moved = {**EDIT, "config.url": "http://127.0.0.1:9/hooks/second", "isEnabled": "true"}
    refused = await submit(client, f"/app/notifications/{hook['id']}", csrf, **moved)
    assert refused.status_code == 422
    assert 'id="e-config.secret"' in refused.text  # a new destination needs its secret again
    moved["config.secret"] = "another-secret-0123456789"
    again = await submit(client, f"/app/notifications/{hook['id']}", csrf, **moved)
    assert again.status_code == 303, again.text
    assert (await read_provider(client, cast, hook["id"]))["isEnabled"] is True


async def test_a_provider_form_with_half_quiet_hours_or_a_short_repeat_names_the_fields(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    hook = await provider(client, cast)
    csrf = await signed_in(client, cast.alice.email)
    half = await submit(
        client, f"/app/notifications/{hook['id']}", csrf, **{**EDIT, "quietHoursEnd": ""}
    )
    assert half.status_code == 422
    assert 'id="e-quietHoursEnd"' in half.text
    short = await submit(
        client, f"/app/notifications/{hook['id']}", csrf, **{**EDIT, "repeatEveryMinutes": "2"}
    )
    assert short.status_code == 422
    assert 'id="e-repeatEveryMinutes"' in short.text
    assert (await read_provider(client, cast, hook["id"]))["name"] == "Hook"


async def test_a_provider_is_deleted_only_from_its_confirmation_page(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    hook = await provider(client, cast)
    csrf = await signed_in(client, cast.alice.email)
    listed = await client.get("/app/notifications")
    assert f'href="/app/notifications/{hook["id"]}/delete"' in listed.text
    asked = await client.get(f"/app/notifications/{hook['id']}/delete")
    assert asked.status_code == 200
    assert "Delete Hook?" in asked.text
    assert f'action="/app/notifications/{hook["id"]}/delete"' in asked.text
    assert (
        await client.get(f"/notification-providers/{hook['id']}", headers=cast.alice.headers)
    ).status_code == 200
    deleted = await submit(client, f"/app/notifications/{hook['id']}/delete", csrf)
    assert deleted.status_code == 303
    gone = await client.get(f"/notification-providers/{hook['id']}", headers=cast.alice.headers)
    assert gone.status_code == 404


async def test_another_tenant_gets_404_for_a_provider_and_a_form_without_csrf_403(
    client: httpx.AsyncClient, other: httpx.AsyncClient, cast: Cast
) -> None:
    hook = await provider(client, cast)
    await signed_in(client, cast.alice.email)
    forged = await submit(client, f"/app/notifications/{hook['id']}", "forged", **EDIT)
    assert forged.status_code == 403
    csrf = await signed_in(other, cast.charlie.email)
    for path in (f"/app/notifications/{hook['id']}", f"/app/notifications/{hook['id']}/delete"):
        assert (await other.get(path)).status_code == 404, path
    walled = await submit(other, f"/app/notifications/{hook['id']}", csrf, **EDIT)
    assert walled.status_code == 404
    assert (await read_provider(client, cast, hook["id"]))["name"] == "Hook"


# --- Escalation policies --------------------------------------------------------------------


async def test_an_escalation_policy_is_created_edited_and_deleted(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    first = await provider(client, cast, "First")
    second = await provider(client, cast, "Second")
    csrf = await signed_in(client, cast.alice.email)
    assert 'href="/app/escalation-policies"' in (await client.get("/app/notifications")).text
    form = await client.get("/app/escalation-policies/new")
    assert form.status_code == 200
    assert 'name="steps.0.providerIds"' in form.text
    # Row 1 left empty: the policy has two steps, rows 0 and 2.
    made = await client.post(
        "/app/escalation-policies/new",
        data={
            "csrf": csrf,
            "projectId": cast.project_id,
            "name": "Night",
            "steps.0.providerIds": first["id"],
            "steps.0.delayMinutes": "0",
            "steps.1.delayMinutes": "15",
            "steps.2.providerIds": [first["id"], second["id"]],
            "steps.2.delayMinutes": "10",
        },
    )
    assert made.status_code == 303, made.text
    policies = (await client.get("/escalation-policies", headers=cast.alice.headers)).json()
    assert [(p["name"], p["steps"]) for p in policies] == [
        (
            "Night",
            [
                {"providerIds": [first["id"]], "delayMinutes": 0},
                {"providerIds": [first["id"], second["id"]], "delayMinutes": 10},
            ],
        )
    ]
    policy_id = policies[0]["id"]
    listed = await client.get("/app/escalation-policies")
    assert "Night" in listed.text
    assert "after 10 min: First, Second" in listed.text
    page = await client.get(f"/app/escalation-policies/{policy_id}")
    assert page.status_code == 200
    assert 'value="Night"' in page.text
    saved = await client.post(
        f"/app/escalation-policies/{policy_id}",
        data={
            "csrf": csrf,
            "name": "Nights",
            "steps.0.providerIds": second["id"],
            "steps.0.delayMinutes": "5",
        },
    )
    assert saved.status_code == 303, saved.text
    read = await client.get(f"/escalation-policies/{policy_id}", headers=cast.alice.headers)
    assert read.json()["name"] == "Nights"
    assert read.json()["steps"] == [{"providerIds": [second["id"]], "delayMinutes": 5}]
    asked = await client.get(f"/app/escalation-policies/{policy_id}/delete")
    assert "Delete Nights?" in asked.text
    deleted = await submit(client, f"/app/escalation-policies/{policy_id}/delete", csrf)
    assert deleted.status_code == 303
    assert (await client.get("/escalation-policies", headers=cast.alice.headers)).json() == []


async def test_an_escalation_policy_form_names_the_row_of_a_wrong_step(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    first = await provider(client, cast, "First")
    csrf = await signed_in(client, cast.alice.email)
    no_step = await submit(
        client, "/app/escalation-policies/new", csrf, projectId=cast.project_id, name="Empty"
    )
    assert no_step.status_code == 422
    assert "Steps:" in no_step.text
    late = await client.post(
        "/app/escalation-policies/new",
        data={
            "csrf": csrf,
            "projectId": cast.project_id,
            "name": "Late",
            "steps.0.delayMinutes": "0",
            "steps.1.providerIds": first["id"],
            "steps.1.delayMinutes": "99999",
        },
    )
    assert late.status_code == 422
    assert 'id="e-steps.1.delayMinutes"' in late.text
    assert (await client.get("/escalation-policies", headers=cast.alice.headers)).json() == []


async def test_another_tenant_gets_404_for_a_policy_and_a_form_without_csrf_403(
    client: httpx.AsyncClient, other: httpx.AsyncClient, cast: Cast
) -> None:
    first = await provider(client, cast, "First")
    made = await client.post(
        "/escalation-policies",
        headers=cast.alice.headers,
        json={
            "projectId": cast.project_id,
            "name": "Night",
            "steps": [{"providerIds": [first["id"]], "delayMinutes": 0}],
        },
    )
    policy_id = made.json()["id"]
    await signed_in(client, cast.alice.email)
    forged = await submit(client, f"/app/escalation-policies/{policy_id}/delete", "forged")
    assert forged.status_code == 403
    csrf = await signed_in(other, cast.charlie.email)
    assert "Night" not in (await other.get("/app/escalation-policies")).text
    for path in (
        f"/app/escalation-policies/{policy_id}",
        f"/app/escalation-policies/{policy_id}/delete",
    ):
        assert (await other.get(path)).status_code == 404, path
    walled = await submit(other, f"/app/escalation-policies/{policy_id}/delete", csrf)
    assert walled.status_code == 404
    stolen = await client.post(
        "/app/escalation-policies/new",
        data={
            "csrf": csrf,
            "projectId": cast.project_id,
            "name": "Stolen",
            "steps.0.providerIds": first["id"],
            "steps.0.delayMinutes": "0",
        },
    )
    assert stolen.status_code == 403  # Alice's session, Charlie's token


# --- API keys ----------------------------------------------------------------------------


async def test_an_api_key_is_shown_once_works_and_stops_working_once_revoked(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    keys_path = f"/app/projects/{cast.project_id}/api-keys"
    assert (await client.get(keys_path)).status_code == 200
    made = await submit(client, keys_path, csrf, name="CI", scope="read", expiresAt="")
    assert made.status_code == 200, made.text
    assert "it is shown on this page only" in made.text
    found = re.search(r'name="key" type="text" value="([^"]+)"', made.text)
    assert found
    key = found.group(1)
    bearer = {"Authorization": f"Bearer {key}"}
    assert (await client.get("/monitors", headers=bearer)).status_code == 200
    listed = await client.get(keys_path)
    assert "CI" in listed.text
    assert key not in listed.text
    stored = (
        await client.get(f"/projects/{cast.project_id}/api-keys", headers=cast.alice.headers)
    ).json()
    assert [(k["name"], k["scope"]) for k in stored] == [("CI", "read")]
    assert f"{stored[0]['prefix']}…" in listed.text
    asked = await client.get(f"{keys_path}/{stored[0]['id']}/revoke")
    assert "Revoke the API key CI?" in asked.text
    revoked = await submit(client, f"{keys_path}/{stored[0]['id']}/revoke", csrf)
    assert revoked.status_code == 303
    assert "API key revoked." in (await client.get(revoked.headers["location"])).text
    assert (await client.get("/monitors", headers=bearer)).status_code == 401


async def test_an_api_key_form_names_its_errors_and_a_member_is_told_the_services_refusal(
    client: httpx.AsyncClient, other: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    keys_path = f"/app/projects/{cast.project_id}/api-keys"
    nameless = await submit(client, keys_path, csrf, name="", scope="read")
    assert nameless.status_code == 422
    assert 'id="e-name"' in nameless.text
    past = await submit(client, keys_path, csrf, name="Old", scope="write", expiresAt="2001-01-01")
    assert past.status_code == 422
    assert 'id="e-expiresAt"' in past.text
    bob = await signed_in(other, cast.bob.email)
    assert (await other.get(keys_path)).status_code == 200
    refused = await submit(other, keys_path, bob, name="Mine", scope="write")
    assert refused.status_code == 403
    assert "made and revoked by the owner or a project manager" in refused.text


async def test_another_tenant_gets_404_for_api_keys_and_a_form_without_csrf_403(
    client: httpx.AsyncClient, other: httpx.AsyncClient, cast: Cast
) -> None:
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "CI", "scope": "write"},
    )
    key_id = made.json()["id"]
    keys_path = f"/app/projects/{cast.project_id}/api-keys"
    await signed_in(client, cast.alice.email)
    assert (await submit(client, keys_path, "forged", name="X", scope="read")).status_code == 403
    csrf = await signed_in(other, cast.charlie.email)
    for path in (keys_path, f"{keys_path}/{key_id}/revoke", f"{keys_path}/nope/revoke"):
        assert (await other.get(path)).status_code == 404, path
    assert (await submit(other, keys_path, csrf, name="X", scope="read")).status_code == 404
    walled = await submit(other, f"{keys_path}/{key_id}/revoke", csrf)
    assert walled.status_code == 404
    listed = await client.get(f"/projects/{cast.project_id}/api-keys", headers=cast.alice.headers)
    assert [k["name"] for k in listed.json()] == ["CI"]


# --- Settings and the account ------------------------------------------------------------


async def test_theme_language_and_a_personal_channel_are_saved_from_the_settings_page(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    page = await client.get("/app/settings")
    assert 'name="slackConfig.webhookUrl"' in page.text
    assert 'name="notifications.slack"' in page.text
    fields = {
        "firstName": "Alice",
        "lastName": "",
        "timezone": "UTC",
        "language": "fr",
        "theme": "dark",
        "preferredNotification": "slack",
        "notifications.slack": "true",
        "slackConfig.webhookUrl": HOOK,
        "emailConfig.to": "",
    }
    saved = await submit(client, "/app/settings", csrf, **fields)
    assert saved.status_code == 303, saved.text
    shown = await client.get("/app/settings")
    assert 'data-theme="dark"' in shown.text
    assert HOOK not in shown.text
    settings = (await client.get("/users/settings", headers=cast.alice.headers)).json()
    assert (settings["language"], settings["theme"]) == ("fr", "dark")
    assert settings["preferredNotification"] == "slack"
    assert settings["channelStatus"]["slack"] == {"active": True, "reason": None}
    # Saved again with the secret left blank: kept.
    again = await submit(client, "/app/settings", csrf, **{**fields, "slackConfig.webhookUrl": ""})
    assert again.status_code == 303, again.text
    kept = (await client.get("/users/settings", headers=cast.alice.headers)).json()
    assert kept["slackConfig"] == settings["slackConfig"]
    assert kept["channelStatus"]["slack"]["active"] is True
    forget = {**fields, "slackConfig.webhookUrl": "", "slackConfig.forget": "true"}
    assert (await submit(client, "/app/settings", csrf, **forget)).status_code == 303
    cleared = (await client.get("/users/settings", headers=cast.alice.headers)).json()
    assert cleared["slackConfig"] == {}


async def test_a_wrong_personal_channel_or_theme_is_named_and_nothing_is_saved(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    bad_url = await submit(
        client, "/app/settings", csrf, timezone="UTC", **{"slackConfig.webhookUrl": "not a url"}
    )
    assert bad_url.status_code == 422
    assert 'id="e-slackConfig.webhookUrl"' in bad_url.text
    assert "not a url" not in bad_url.text  # a secret field is never sent back
    bad_theme = await submit(client, "/app/settings", csrf, timezone="UTC", theme="purple")
    assert bad_theme.status_code == 422
    assert 'id="e-theme"' in bad_theme.text
    settings = (await client.get("/users/settings", headers=cast.alice.headers)).json()
    assert (settings["theme"], settings["slackConfig"]) == ("light", {})
    assert (await submit(client, "/app/settings", "forged", theme="dark")).status_code == 403


async def test_an_account_is_deleted_from_its_confirmation_page_and_signs_out(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.charlie.email)
    asked = await client.get("/app/settings/delete")
    assert asked.status_code == 200
    assert "Delete your account?" in asked.text
    assert cast.charlie.email in asked.text
    assert (await submit(client, "/app/settings/delete", "forged")).status_code == 403
    deleted = await submit(client, "/app/settings/delete", csrf)
    assert deleted.status_code == 303
    assert deleted.headers["location"] == "/app/login"
    assert (await client.get("/app/settings")).status_code == 303
    login = await client.post(
        "/auth/login", json={"email": cast.charlie.email, "password": PASSWORD}
    )
    assert login.status_code == 401
