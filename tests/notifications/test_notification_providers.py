"""Notification providers through the HTTP API: config per type, masking, plans, access."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Account, Cast, assert_problem
from tests.factories import create_provider

SID = "AC" + "0123456789abcdef" * 2
TOKEN = "f" * 32
CONFIGS: dict[str, dict[str, Any]] = {
    "email": {"to": ["oncall@example.com", "ops@example.com"]},
    "slack": {"webhookUrl": "https://hooks.slack.com/services/T000/B000/SECRETPATH"},
    "discord": {"webhookUrl": "https://discord.com/api/webhooks/1/SECRETPATH"},
    "teams": {"webhookUrl": "https://prod.westeurope.logic.azure.com/workflows/SECRETPATH"},
    "webhook": {
        "url": "https://hooks.example.com/upwatch",
        "headers": {"Authorization": "Bearer very-secret-token-value"},
        "secret": "signing-secret-0123456789",
    },
    "telegram": {"botToken": "123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ", "chatId": "-100123"},
    "pagerduty": {"routingKey": "R0UTINGKEY0123456789abcdefABCDEF"},
    "sms": {"to": "+14155550100", "from": "+14155550199", "accountSid": SID, "authToken": TOKEN},
    "whatsapp": {
        "to": "+14155550100",
        "from": "+14155550199",
        "accountSid": SID,
        "authToken": TOKEN,
    },
}
SECRETS = {
    "slack": "SECRETPATH",
    "discord": "SECRETPATH",
    "teams": "SECRETPATH",
    "webhook": "signing-secret",
    "telegram": "AAbbCCdd",
    "pagerduty": "R0UTINGKEY",
    "sms": TOKEN,
    "whatsapp": TOKEN,
}
PRO_ONLY = ("sms", "whatsapp", "pagerduty")


async def _create(
    client: httpx.AsyncClient, account: Account, project_id: str, kind: str, **fields: Any
) -> httpx.Response:
    body = {"projectId": project_id, "type": kind, "name": f"{kind} alerts", **fields}
    body.setdefault("config", CONFIGS[kind])
    return await client.post("/notification-providers", headers=account.headers, json=body)


async def _provider(
    client: httpx.AsyncClient, account: Account, project_id: str, kind: str = "webhook", **f: Any
) -> dict[str, Any]:
    body = {"type": kind, "name": f"{kind} alerts", "config": CONFIGS[kind], **f}
    return await create_provider(client, account.headers, project_id, **body)


async def _patch(
    client: httpx.AsyncClient, account: Account, provider: dict[str, Any], **fields: Any
) -> httpx.Response:
    """``account`` changes the provider's ``fields``, whatever the answer."""
    path = f"/notification-providers/{provider['id']}"
    return await client.patch(path, headers=account.headers, json=fields)


async def _upgrade(client: httpx.AsyncClient, account: Account) -> None:
    response = await client.post("/subscriptions/upgrade", headers=account.headers, json={})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("kind", sorted(CONFIGS))
async def test_every_channel_type_is_created_with_its_secrets_masked(
    client: httpx.AsyncClient, cast: Cast, kind: str
) -> None:
    await _upgrade(client, cast.alice)
    body = await _provider(client, cast.bob, cast.project_id, kind)
    assert body["type"] == kind
    assert body["isEnabled"] is True
    assert body["projectId"] == cast.project_id
    assert (body["quietHoursStart"], body["quietHoursEnd"]) == (None, None)
    for response in (
        body,
        (
            await client.get(f"/notification-providers/{body['id']}", headers=cast.alice.headers)
        ).json(),
        (await client.get("/notification-providers/user", headers=cast.alice.headers)).json()[0],
    ):
        shown = str(response["config"])
        if kind in SECRETS:
            assert SECRETS[kind] not in shown
            assert "****" in shown
        else:
            assert response["config"] == CONFIGS[kind]
    if kind == "webhook":
        # Webhook URLs often hold their credential in the path or query: only the host shows.
        assert body["config"]["url"] == "https://hooks.example.com/****"
        assert "very-secret" not in str(body["config"]["headers"])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://hooks.example.com:8443/hook/SECRETPATH?token=SECRETQUERY",
            "https://hooks.example.com:8443/****",
        ),
        (
            "http://user:SECRETPASS@hooks.example.com:8080/SECRETPATH#SECRETFRAG",
            "http://hooks.example.com:8080/****",
        ),
        ("http://[2001:db8::1]:9000/SECRETPATH", "http://[2001:db8::1]:9000/****"),
        ("https://hooks.example.com/SECRETPATH", "https://hooks.example.com/****"),
    ],
)
def test_a_masked_url_shows_its_scheme_host_and_port_and_hides_the_rest(
    url: str, shown: str
) -> None:
    from upwatch.notifications.channels import mask_value

    assert mask_value(url) == shown


async def test_a_masked_webhook_url_keeps_its_port_and_sent_back_keeps_the_stored_url(
    client: httpx.AsyncClient, cast: Cast, runtime: Any
) -> None:
    from upwatch.models import NotificationProvider

    secret_url = "https://hooks.example.com:8443/hook/SECRETPATH?token=SECRETQUERY"
    config = {**CONFIGS["webhook"], "url": secret_url}
    provider = await _provider(client, cast.alice, cast.project_id, "webhook", config=config)
    assert provider["config"]["url"] == "https://hooks.example.com:8443/****"
    assert "SECRET" not in str(provider["config"])
    url = f"/notification-providers/{provider['id']}"
    same = await client.patch(url, headers=cast.alice.headers, json={"config": provider["config"]})
    assert same.status_code == 200, same.text
    async with runtime.db.sessionmaker() as session:
        stored = await session.get(NotificationProvider, provider["id"])
        assert stored is not None
        assert stored.config["url"] == secret_url


@pytest.mark.parametrize("kind", PRO_ONLY)
async def test_a_channel_outside_the_free_plan_is_refused_with_402(
    client: httpx.AsyncClient, cast: Cast, kind: str
) -> None:
    problem = assert_problem(await _create(client, cast.alice, cast.project_id, kind), 402)
    assert problem["type"].endswith("/plan-limit")
    assert "notificationChannels" in problem["detail"]


async def test_the_plan_that_counts_is_the_project_owners(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await _upgrade(client, cast.bob)  # a member's plan does not open channels in Alice's project
    assert_problem(await _create(client, cast.bob, cast.project_id, "sms"), 402)
    await _upgrade(client, cast.alice)
    assert (await _create(client, cast.bob, cast.project_id, "sms")).status_code == 201


async def test_changing_the_type_to_one_outside_the_plan_is_refused_with_402(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    provider = await _provider(client, cast.alice, cast.project_id)
    response = await _patch(client, cast.alice, provider, type="sms", config=CONFIGS["sms"])
    assert_problem(response, 402)


async def test_a_masked_secret_sent_back_keeps_the_stored_one_and_a_new_one_replaces_it(
    client: httpx.AsyncClient, cast: Cast, runtime: Any
) -> None:
    from upwatch.models import NotificationProvider

    provider = await _provider(client, cast.alice, cast.project_id, "webhook")
    url = f"/notification-providers/{provider['id']}"
    shown = provider["config"]
    same = await client.patch(url, headers=cast.alice.headers, json={"config": shown})
    assert same.status_code == 200, same.text
    async with runtime.db.sessionmaker() as session:
        stored = await session.get(NotificationProvider, provider["id"])
        assert stored.config == CONFIGS["webhook"]
    changed = await client.patch(
        url,
        headers=cast.alice.headers,
        json={"config": {"url": "https://new.example/h", "secret": "another-secret-value-42"}},
    )
    assert changed.status_code == 200
    async with runtime.db.sessionmaker() as session:
        stored = await session.get(NotificationProvider, provider["id"])
        assert stored.config == {
            "url": "https://new.example/h",
            "secret": "another-secret-value-42",
        }


async def test_stored_secrets_do_not_follow_a_provider_to_a_new_destination(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await _upgrade(client, cast.alice)
    for kind, move in (
        ("webhook", {"url": "https://bob.example/catch"}),
        ("telegram", {"chatId": "777"}),
        ("sms", {"to": "+14155550123"}),
    ):
        provider = await _provider(client, cast.alice, cast.project_id, kind)
        response = await _patch(client, cast.bob, provider, config={**provider["config"], **move})
        problem = assert_problem(response, 422)
        assert "give the secret again" in problem["detail"]


async def test_only_the_owner_or_a_manager_moves_a_provider_to_another_project(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await _upgrade(client, cast.alice)
    await _upgrade(client, cast.bob)
    provider = await _provider(client, cast.alice, cast.project_id, "email")
    url = f"/notification-providers/{provider['id']}"
    bobs = await client.post("/projects", headers=cast.bob.headers, json={"name": "Bob's"})
    taken = await client.patch(url, headers=cast.bob.headers, json={"projectId": bobs.json()["id"]})
    assert_problem(taken, 403)
    second = await client.post("/projects", headers=cast.alice.headers, json={"name": "Blog"})
    moved = await client.patch(
        url, headers=cast.alice.headers, json={"projectId": second.json()["id"]}
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["projectId"] == second.json()["id"]


async def test_flags_take_true_or_false_only(client: httpx.AsyncClient, cast: Cast) -> None:
    provider = await _provider(client, cast.alice, cast.project_id, "email")
    for value in (0, 1, "yes", "false"):
        response = await _patch(client, cast.alice, provider, isEnabled=value)
        assert_problem(response, 422)


async def test_a_provider_is_renamed_disabled_and_moved_to_another_type_with_its_config(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    provider = await _provider(client, cast.alice, cast.project_id, "webhook")
    url = f"/notification-providers/{provider['id']}"
    renamed = await client.patch(
        url, headers=cast.bob.headers, json={"name": "Night shift", "isEnabled": False}
    )
    assert (renamed.json()["name"], renamed.json()["isEnabled"]) == ("Night shift", False)
    no_config = await client.patch(url, headers=cast.bob.headers, json={"type": "email"})
    assert_problem(no_config, 422)
    moved = await client.patch(
        url, headers=cast.bob.headers, json={"type": "email", "config": CONFIGS["email"]}
    )
    assert moved.status_code == 200
    assert moved.json()["type"] == "email"
    assert moved.json()["config"] == CONFIGS["email"]


@pytest.mark.parametrize(
    ("kind", "config"),
    [
        ("email", {"to": []}),
        ("email", {"to": ["not-an-address"]}),
        ("slack", {}),
        ("slack", {"webhookUrl": "ftp://hooks.slack.com/x"}),
        ("webhook", {"url": "https://ok.example", "headers": {"Bad Name": "x"}}),
        ("webhook", {"url": "https://ok.example", "headers": {"X-A": "line\r\nInjected: 1"}}),
        ("webhook", {"url": "https://ok.example", "headers": {"x-upwatch-signature": "x"}}),
        ("webhook", {"url": "https://ok.example", "headers": {"Webhook-Signature": "v1,x"}}),
        ("webhook", {"url": "https://ok.example", "secret": "whsec_not*base64"}),
        ("webhook", {"url": "https://ok.example", "secret": "whsec_c2hvcnQ="}),
        ("telegram", {"botToken": "nope", "chatId": "1"}),
        ("telegram", {"botToken": "123:AAbbCCddEEffGGhhIIjjKK", "chatId": "chat"}),
        ("pagerduty", {"routingKey": "short"}),
        ("sms", {**CONFIGS["sms"], "accountSid": "XX123"}),
        ("whatsapp", {**CONFIGS["whatsapp"], "to": "0041 79 000 00 00"}),
    ],
)
async def test_config_that_does_not_suit_the_type_is_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, kind: str, config: dict[str, Any]
) -> None:
    await _upgrade(client, cast.alice)
    assert_problem(await _create(client, cast.alice, cast.project_id, kind, config=config), 422)
    provider = await _provider(client, cast.alice, cast.project_id, kind)
    patched = await _patch(client, cast.alice, provider, config=config)
    assert_problem(patched, 422)


@pytest.mark.parametrize(
    ("kind", "config"),
    [
        ("webhook", {"url": "http://127.0.0.1:8080/hook"}),
        ("webhook", {"url": "http://10.0.0.5/hook"}),
        ("webhook", {"url": "http://[::1]/hook"}),
        ("slack", {"webhookUrl": "http://localhost/hook"}),
        ("discord", {"webhookUrl": "http://169.254.169.254/latest/meta-data"}),
        ("teams", {"webhookUrl": "http://192.168.1.1/flow"}),
    ],
)
async def test_urls_at_internal_addresses_are_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, kind: str, config: dict[str, Any]
) -> None:
    problem = assert_problem(
        await _create(client, cast.alice, cast.project_id, kind, config=config), 422
    )
    assert "refused" in problem["detail"]
    provider = await _provider(client, cast.alice, cast.project_id, kind)
    patched = await _patch(client, cast.alice, provider, config=config)
    assert_problem(patched, 422)


async def test_quiet_hours_need_both_ends_and_are_stored_as_hh_mm(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    only_start = await _create(
        client, cast.alice, cast.project_id, "email", quietHoursStart="22:00"
    )
    assert_problem(only_start, 422)
    provider = await _provider(
        client, cast.alice, cast.project_id, "email", quietHoursStart="22:00", quietHoursEnd="6:30"
    )
    assert (provider["quietHoursStart"], provider["quietHoursEnd"]) == ("22:00", "06:30")
    url = f"/notification-providers/{provider['id']}"
    half = await client.patch(url, headers=cast.alice.headers, json={"quietHoursEnd": None})
    assert assert_problem(half, 422)["errors"][0]["field"] == "quietHoursEnd"
    cleared = await client.patch(
        url, headers=cast.alice.headers, json={"quietHoursStart": None, "quietHoursEnd": None}
    )
    assert (cleared.json()["quietHoursStart"], cleared.json()["quietHoursEnd"]) == (None, None)
    for bad in ("24:00", "7", "07:60", "7:5"):
        response = await client.patch(
            url, headers=cast.alice.headers, json={"quietHoursStart": bad, "quietHoursEnd": "08:00"}
        )
        assert_problem(response, 422)


@pytest.mark.parametrize(
    ("ends", "missing"),
    [
        ({"quietHoursStart": None, "quietHoursEnd": "06:00"}, "quietHoursStart"),
        ({"quietHoursEnd": "06:00"}, "quietHoursStart"),
        ({"quietHoursStart": "22:00", "quietHoursEnd": None}, "quietHoursEnd"),
        ({"quietHoursStart": "22:00"}, "quietHoursEnd"),
    ],
)
async def test_quiet_hours_with_one_end_null_or_left_out_are_refused_alike_everywhere(
    client: httpx.AsyncClient, cast: Cast, ends: dict[str, Any], missing: str
) -> None:
    # Contract §9: only one of start and end is a 422, never "no quiet hours" (a null end
    # would otherwise silently drop the other).
    created = await _create(client, cast.alice, cast.project_id, "email", **ends)
    assert assert_problem(created, 422)["errors"] == [
        {"field": missing, "message": "quiet hours need both a start and an end"}
    ]
    plain = await _provider(client, cast.alice, cast.project_id, "email")
    patched = await _patch(client, cast.alice, plain, **ends)
    assert assert_problem(patched, 422)["errors"][0]["field"] == missing
    if None in ends.values():  # a null end removes it, so the other is left alone
        quiet = await _provider(
            client,
            cast.alice,
            cast.project_id,
            "email",
            quietHoursStart="22:00",
            quietHoursEnd="06:00",
        )
        patched = await _patch(client, cast.alice, quiet, **ends)
        assert assert_problem(patched, 422)["errors"][0]["field"] == missing
    # The rule is published where the schema cannot say it.
    document = (await client.get("/openapi.json")).json()
    for method in ("post", "patch"):
        path = "/notification-providers" if method == "post" else "/notification-providers/{id}"
        assert "Quiet hours need both ends" in document["paths"][path][method]["description"]
    fields = document["components"]["schemas"]["EmailProviderCreate"]["properties"]
    assert "quietHoursEnd" in fields["quietHoursStart"]["description"]
    assert "quietHoursStart" in fields["quietHoursEnd"]["description"]


async def test_unknown_types_and_missing_fields_are_refused_with_422(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    bad_type = await client.post(
        "/notification-providers",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "type": "pigeon", "name": "x", "config": {}},
    )
    assert_problem(bad_type, 422)
    no_name = await client.post(
        "/notification-providers",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "type": "email", "config": CONFIGS["email"]},
    )
    assert_problem(no_name, 422)


async def test_members_list_the_providers_of_their_projects_and_charlie_sees_none(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    first = await _provider(client, cast.alice, cast.project_id, "email")
    second = await _provider(client, cast.alice, cast.project_id, "slack")
    listed = await client.get("/notification-providers/user", headers=cast.bob.headers)
    assert [p["id"] for p in listed.json()] == [second["id"], first["id"]]
    assert listed.headers["X-Total-Count"] == "2"
    own = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Mine"})
    mine = await _provider(client, cast.charlie, own.json()["id"], "email")
    charlie = await client.get("/notification-providers/user", headers=cast.charlie.headers)
    assert [p["id"] for p in charlie.json()] == [mine["id"]]
    narrowed = await client.get(
        "/notification-providers/user",
        headers=cast.alice.headers,
        params={"projectId": cast.project_id},
    )
    assert len(narrowed.json()) == 2


async def test_charlie_cannot_read_change_test_or_delete_alices_provider(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    provider = await _provider(client, cast.alice, cast.project_id, "email")
    url = f"/notification-providers/{provider['id']}"
    headers = cast.charlie.headers
    assert_problem(await client.get(url, headers=headers), 404)
    assert_problem(await client.patch(url, headers=headers, json={"name": "x"}), 404)
    assert_problem(await client.post(f"{url}/test", headers=headers), 404)
    assert_problem(await client.delete(url, headers=headers), 404)
    assert_problem(await _create(client, cast.charlie, cast.project_id, "email"), 404)


async def test_a_provider_cannot_be_moved_into_a_project_the_caller_does_not_belong_to(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    provider = await _provider(client, cast.alice, cast.project_id, "email")
    other = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    moved = await _patch(client, cast.alice, provider, projectId=other.json()["id"])
    assert_problem(moved, 404)


async def test_deleting_a_provider_answers_200_and_it_is_gone(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    provider = await _provider(client, cast.alice, cast.project_id, "email")
    url = f"/notification-providers/{provider['id']}"
    deleted = await client.delete(url, headers=cast.bob.headers)
    assert deleted.json() == {"id": provider["id"], "deleted": True}
    assert_problem(await client.get(url, headers=cast.alice.headers), 404)


async def test_a_project_holds_at_most_fifty_providers(
    client: httpx.AsyncClient, cast: Cast, runtime: Any
) -> None:
    from upwatch.models import NotificationProvider

    async with runtime.db.sessionmaker() as session:
        for number in range(50):
            session.add(
                NotificationProvider(
                    project_id=cast.project_id,
                    type="email",
                    name=f"Mail {number}",
                    config=CONFIGS["email"],
                )
            )
        await session.commit()
    problem = assert_problem(await _create(client, cast.alice, cast.project_id, "email"), 422)
    assert problem["errors"][0]["field"] == "projectId"


async def test_providers_need_a_token(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/notification-providers/user"), 401)
    assert_problem(await client.post("/notification-providers/x/test"), 401)
