"""Validation errors a person understands (contract §2, §3): each field named as the client
sent it, what is allowed said in words, unknown fields refused with a suggestion."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Cast, assert_problem
from tests.factories import change_settings, create_monitor, create_provider
from upwatch.kit.inputs import MAX_OBJECT_DEPTH, PATTERN_WORDS
from upwatch.probes.registry import KINDS

# In rank order; tests/test_monitor_types.py holds the names as written.
MONITOR_TYPES = ", ".join(KINDS)
HOOK = {"url": "https://hooks.example.com/upwatch"}


def _errors(response: httpx.Response) -> list[dict[str, str]]:
    problem = assert_problem(response, 422)
    # The detail repeats every error, so a client that shows only the detail misses none.
    assert problem["detail"] == "; ".join(
        f"{e['field']}: {e['message']}" for e in problem["errors"]
    )
    errors: list[dict[str, str]] = problem["errors"]
    return errors


async def _monitor(client: httpx.AsyncClient, cast: Cast) -> dict[str, Any]:
    return await create_monitor(
        client, cast.alice, cast.project_id, url="https://example.com/", intervalSeconds=300
    )


async def _post_monitor(client: httpx.AsyncClient, cast: Cast, **fields: Any) -> httpx.Response:
    body = {"projectId": cast.project_id, "name": "Shop", **fields}
    return await client.post("/monitors", headers=cast.alice.headers, json=body)


async def _patch_monitor(
    client: httpx.AsyncClient, cast: Cast, monitor: dict[str, Any], **fields: Any
) -> httpx.Response:
    return await client.patch(f"/monitors/{monitor['id']}", headers=cast.alice.headers, json=fields)


async def _hook(client: httpx.AsyncClient, cast: Cast) -> dict[str, Any]:
    return await create_provider(
        client, cast.alice.headers, cast.project_id, name="Hook", type="webhook", config=HOOK
    )


async def _post_provider(
    client: httpx.AsyncClient, cast: Cast, config: dict[str, Any], **fields: Any
) -> httpx.Response:
    """A webhook named Hook with this config, unless ``fields`` say otherwise."""
    body = {"projectId": cast.project_id, "name": "Hook", "type": "webhook", **fields}
    body["config"] = config
    return await client.post("/notification-providers", headers=cast.alice.headers, json=body)


async def _patch_provider(
    client: httpx.AsyncClient, cast: Cast, provider: dict[str, Any], config: dict[str, Any]
) -> httpx.Response:
    return await client.patch(
        f"/notification-providers/{provider['id']}",
        headers=cast.alice.headers,
        json={"config": config},
    )


# --- Unknown fields -------------------------------------------------------------------------


async def test_a_misspelt_field_is_refused_with_the_field_it_probably_meant_and_changes_nothing(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    monitor = await _monitor(client, cast)
    response = await _patch_monitor(client, cast, monitor, intervalSecond=120)
    assert _errors(response) == [
        {"field": "intervalSecond", "message": "unknown field; did you mean intervalSeconds?"}
    ]
    after = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert after.json() == monitor


async def test_every_unknown_field_is_named_even_with_other_errors_and_inside_nested_objects(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await change_settings(
        client, cast.alice, languag="de", notifications={"emial": True}, theme="sepia", zz=1
    )
    assert sorted(_errors(response), key=lambda e: e["field"]) == [
        {"field": "languag", "message": "unknown field; did you mean language?"},
        {"field": "notifications.emial", "message": "unknown field; did you mean email?"},
        {"field": "theme", "message": "one of light, dark"},
        {"field": "zz", "message": "unknown field"},
    ]
    settings = (await client.get("/users/settings", headers=cast.alice.headers)).json()
    assert (settings["language"], settings["notifications"]["email"]) == ("en", True)


async def test_an_unknown_field_of_a_provider_config_is_refused_on_create_and_on_update(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    created = await _post_provider(client, cast, {**HOOK, "secrte": "s3cret-value"})
    assert _errors(created) == [
        {"field": "config.secrte", "message": "unknown field; did you mean secret?"}
    ]
    provider = await _hook(client, cast)
    updated = await _patch_provider(client, cast, provider, {**HOOK, "headrs": {"X-Team": "ops"}})
    assert _errors(updated) == [
        {"field": "config.headrs", "message": "unknown field; did you mean headers?"}
    ]


async def test_fields_of_the_resource_that_a_request_cannot_set_are_refused_as_read_only(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    monitor = await _monitor(client, cast)
    response = await _patch_monitor(client, cast, monitor, status="paused", name="Shop front")
    assert _errors(response) == [
        {"field": "status", "message": "read-only, not set by this request"}
    ]
    after = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert (after.json()["status"], after.json()["name"]) == ("pending", "Shop")


async def test_the_openapi_document_publishes_that_request_bodies_take_no_other_fields(
    client: httpx.AsyncClient,
) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    for name in ("MonitorUpdate", "HttpMonitorCreate", "WebhookConfig", "UpdateSettingsRequest"):
        assert schemas[name]["additionalProperties"] is False, name


# --- The type of a monitor or provider ------------------------------------------------------


async def test_a_missing_monitor_type_says_it_is_required_and_which_types_there_are(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await _post_monitor(client, cast, url="https://example.com/")
    assert _errors(response) == [{"field": "type", "message": f"required, one of {MONITOR_TYPES}"}]
    assert "discriminator" not in response.text


@pytest.mark.parametrize("kind", ["ftp", "HTTP", 5, None])
async def test_an_unknown_monitor_type_lists_the_types_there_are(
    client: httpx.AsyncClient, cast: Cast, kind: object
) -> None:
    response = await _post_monitor(client, cast, type=kind, url="https://example.com/")
    expected = "required, one of" if kind is None else "one of"
    assert _errors(response) == [{"field": "type", "message": f"{expected} {MONITOR_TYPES}"}]


@pytest.mark.parametrize("path", ["/monitors", "/notification-providers"])
async def test_a_body_that_is_not_an_object_is_still_a_400_where_a_type_picks_the_shape(
    client: httpx.AsyncClient, cast: Cast, path: str
) -> None:
    response = await client.post(path, headers=cast.alice.headers, json=[{"type": "http"}])
    assert assert_problem(response, 400)["detail"] == "the request body must be a JSON object"


async def test_an_unknown_provider_type_lists_the_types_there_are(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await _post_provider(client, cast, {}, name="Pager", type="pager")
    [error] = _errors(response)
    assert error["field"] == "type"
    assert error["message"] == (
        "one of email, slack, discord, teams, webhook, telegram, pagerduty, sms, whatsapp, "
        "ntfy, gotify, pushover, matrix, mattermost, rocketchat, googlechat, opsgenie, apprise"
    )


# --- Field paths as sent and rules in words ---------------------------------------------


async def test_a_bad_url_says_what_is_allowed_in_words_under_the_field_name_as_sent(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await _post_monitor(client, cast, type="http", url="ftp://example.com/")
    assert _errors(response) == [
        {
            "field": "url",
            "message": "an http:// or https:// address without spaces or control characters",
        }
    ]
    assert "\\u0000" not in response.text


async def test_a_field_of_a_provider_config_is_named_without_the_type_in_front(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    config = {"botToken": "not a token", "chatId": "-100123"}
    response = await _post_provider(client, cast, config, name="Telegram", type="telegram")
    [error] = _errors(response)
    assert error["field"] == "config.botToken"
    assert error["message"].startswith("a bot token as BotFather gives it")


async def test_a_refused_name_of_an_entry_is_named_as_the_key(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    provider = await _hook(client, cast)
    response = await _patch_provider(client, cast, provider, {**HOOK, "headers": {"X Team": "ops"}})
    assert _errors(response) == [
        {
            "field": "config.headers.X Team",
            "message": "key: a header name (letters, digits and ! # $ % & ' * + - . ^ _ ` | ~)",
        }
    ]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": ""}, "name", "may not be empty"),
        ({"name": "x" * 101}, "name", "at most 100 characters"),
        ({"name": "two\nlines"}, "name", "a single line of text, without control characters"),
        ({"intervalSeconds": "often"}, "intervalSeconds", "must be a whole number"),
        ({"intervalSeconds": 5}, "intervalSeconds", "at least 10"),
        ({"timeoutSeconds": 0}, "timeoutSeconds", "more than 0"),
        ({"retries": 11}, "retries", "at most 10"),
        ({"isActive": "yes"}, "isActive", "must be true or false"),
        ({"method": "FETCH"}, "method", "one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"),
        ({"expectedStatusCodes": [200, 700]}, "expectedStatusCodes.1", "at most 599"),
        ({"regionIds": "local"}, "regionIds", "must be a list"),
        ({"headers": []}, "headers", "must be an object"),
        ({"host": "exa mple.com"}, "host", PATTERN_WORDS[r"^[A-Za-z0-9._:\[\]-]+$"]),
    ],
)
async def test_common_mistakes_are_named_by_field_and_said_in_words(
    client: httpx.AsyncClient, cast: Cast, fields: dict[str, Any], field: str, message: str
) -> None:
    monitor = await _monitor(client, cast)
    response = await _patch_monitor(client, cast, monitor, **fields)
    assert _errors(response) == [{"field": field, "message": message}]


async def test_every_pattern_the_openapi_document_publishes_has_words_for_its_errors(
    client: httpx.AsyncClient,
) -> None:
    document = (await client.get("/openapi.json")).json()
    patterns: set[str] = set()

    def collect(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                patterns.add(node["pattern"])
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for item in node:
                collect(item)

    collect(document)
    assert patterns
    assert patterns - set(PATTERN_WORDS) == set()


# --- Refused targets --------------------------------------------------------------------


async def test_a_refused_loopback_monitor_target_names_the_setting_that_allows_it(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await _post_monitor(client, cast, type="http", url="http://127.0.0.1:8080/")
    [error] = _errors(response)
    assert error["field"] == "url"
    assert "127.0.0.1 is not a public address (loopback)" in error["message"]
    assert "UPWATCH_ALLOW_PRIVATE_TARGETS=true" in error["message"]
    host = await _post_monitor(client, cast, type="tcp", host="localhost", port=5432)
    [error] = _errors(host)
    assert (error["field"], "UPWATCH_ALLOW_PRIVATE_TARGETS" in error["message"]) == ("host", True)


async def test_a_refused_private_webhook_address_names_the_setting_that_allows_it(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await _post_provider(client, cast, {"url": "http://10.0.0.5/hook"})
    [error] = _errors(response)
    assert error["field"] == "config.url"
    assert "UPWATCH_ALLOW_PRIVATE_TARGETS=true" in error["message"]


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://xn--a.com/", "not a valid domain name"),
        ("http://xn--a-ecp.com/", "not a valid domain name"),
        ("http://a..b/", "an empty label"),
        ("http://.example.com/", "an empty label"),
        ("http://\u2488.com/", "an empty label"),  # ⒈ is "1." once normalised
        (f"http://{'a' * 64}.com/", "longer than 63 characters"),
        (f"http://{'a.' * 127}com/", "longer than 253 characters"),
        ("http://ex%41mple.com/", "not a valid domain name"),
    ],
)
async def test_a_url_whose_host_is_no_domain_name_is_a_422_naming_the_field(
    client: httpx.AsyncClient, cast: Cast, url: str, words: str
) -> None:
    created = await _post_monitor(client, cast, type="http", url=url)
    [error] = _errors(created)
    assert error["field"] == "url"
    assert words in error["message"]
    monitor = await _monitor(client, cast)
    changed = await _patch_monitor(client, cast, monitor, url=url)
    assert [e["field"] for e in _errors(changed)] == ["url"]
    hook = await _post_provider(client, cast, {"url": url})
    assert [e["field"] for e in _errors(hook)] == ["config.url"]


async def test_a_host_that_is_no_domain_name_is_a_422_naming_the_host_field(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await _post_monitor(client, cast, type="tcp", host="db..example.com", port=5432)
    [error] = _errors(response)
    assert error["field"] == "host"
    assert "an empty label" in error["message"]


# --- Deeply nested bodies ---------------------------------------------------------------


def _nested_text(levels: int) -> str:
    """JSON text of ``levels`` objects inside each other, written by hand: no encoder recurses."""
    return '{"a":' * levels + "1" + "}" * levels


async def _send(
    client: httpx.AsyncClient, cast: Cast, method: str, path: str, text: str
) -> httpx.Response:
    headers = {**cast.alice.headers, "Content-Type": "application/json"}
    return await client.request(method, path, headers=headers, content=text.encode())


@pytest.mark.parametrize("levels", [MAX_OBJECT_DEPTH + 1, 500])
async def test_a_config_object_nested_too_deep_is_a_422_naming_it_however_deep(
    client: httpx.AsyncClient, cast: Cast, levels: int
) -> None:
    provider = await _hook(client, cast)
    deep = _nested_text(levels)
    for method, path, text, field in (
        ("PUT", "/users/settings", f'{{"slackConfig": {deep}}}', "slackConfig"),
        ("PUT", "/users/me", f'{{"settings": {{"emailConfig": {deep}}}}}', "settings.emailConfig"),
        ("PATCH", f"/notification-providers/{provider['id']}", f'{{"config": {deep}}}', "config"),
    ):
        response = await _send(client, cast, method, path, text)
        assert _errors(response) == [
            {"field": field, "message": f"nested deeper than {MAX_OBJECT_DEPTH} levels"}
        ], path


async def test_a_body_nested_deeper_than_any_parser_reads_is_a_400_on_every_endpoint(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    deep = _nested_text(100_000)
    for method, path, text in (
        ("PUT", "/users/settings", f'{{"slackConfig": {deep}}}'),
        ("POST", "/notification-providers", f'{{"type": "webhook", "config": {deep}}}'),
        ("POST", "/monitors", f'{{"projectId": "{cast.project_id}", "headers": {deep}}}'),
        ("POST", "/auth/login", deep),
    ):
        problem = assert_problem(await _send(client, cast, method, path, text), 400)
        assert problem["detail"] == "the request body nests too deeply to be read", path
