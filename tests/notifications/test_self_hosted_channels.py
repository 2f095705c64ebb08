"""ntfy, Gotify, Pushover, Matrix and Mattermost deliver to local stand-ins of their services.

One aiohttp server on loopback plays the five services as their documentation describes them:
it answers only the documented method and path, checks the credential where the service
would (a wrong one gets the service's own error answer), reads the body in the documented
format, and records what it understood. No such server installs from the package registries
this project uses (no Debian, PyPI or npm package of ntfy, Gotify, a Matrix homeserver or
Mattermost), so the stand-ins are the receivers.
"""

from __future__ import annotations

import email.header
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
from aiohttp import web

from tests.conftest import Cast, assert_problem, make_settings
from tests.console.forms import signed_in, submit
from tests.factories import change_settings, create_provider
from tests.notifications import test_transports as transports
from tests.notifications.test_transports import INCIDENT_URL, SINCE, opened_event
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.mail.sender import SmtpTransport
from upwatch.notifications.channels import REGISTRY, DeliveryKit, TransportError, deliver
from upwatch.notifications.events import AlertEvent
from upwatch.runtime import Runtime

NTFY_TOKEN = "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2"
GOTIFY_TOKEN = "AvKcy9o-yvVhyKd"
PUSHOVER_TOKEN = "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
PUSHOVER_USER = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
MATRIX_TOKEN = "syt_Ym90_lDtdJrFNEbMIpQYnRqvK_2b4E9T"
MATRIX_ROOM = "!OGEhHVWSdvArJzumhm:matrix.example.org"
MATTERMOST_KEY = "xjmzqo3cnbrzxcnk5p1ug8bsko"


def resolved_event() -> AlertEvent:
    """Recovered an hour after it began."""
    recovered = SINCE + timedelta(hours=1)
    return transports.resolved_event(occurred_at=recovered, resolved_at=recovered)


@dataclass
class Delivered:
    """A request a stand-in accepted, as the service understood it."""

    service: str
    method: str
    path: str
    headers: dict[str, str]
    fields: dict[str, Any]


@dataclass
class Services:
    """Local stand-ins of the five services; ``fail`` makes the next answers an error."""

    url: str = ""
    delivered: list[Delivered] = field(default_factory=list)
    attempts: int = 0
    fail: tuple[int, str] | None = None
    matrix_events: dict[str, str] = field(default_factory=dict)  # txnId -> event id

    def only(self, service: str) -> Delivered:
        assert [d.service for d in self.delivered] == [service], self.delivered
        return self.delivered[0]

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._failing])
        app.router.add_post("/{topic:[-_A-Za-z0-9]{1,64}}", self.ntfy)
        app.router.add_post("/gotify/message", self.gotify)
        app.router.add_post("/1/messages.json", self.pushover)
        app.router.add_put("/_matrix/client/v3/rooms/{room}/send/m.room.message/{txn}", self.matrix)
        app.router.add_post("/hooks/{key}", self.mattermost)
        return app

    @web.middleware
    async def _failing(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.attempts += 1
        if self.fail is not None:
            status, text = self.fail
            return web.Response(status=status, text=text, content_type="application/json")
        response: web.StreamResponse = await handler(request)
        return response

    def _keep(self, service: str, request: web.Request, fields: dict[str, Any]) -> None:
        headers = dict(request.headers)
        self.delivered.append(Delivered(service, request.method, request.path, headers, fields))

    async def ntfy(self, request: web.Request) -> web.Response:
        # https://docs.ntfy.sh/publish/: the body is the message, the rest are headers.
        if request.headers.get("Authorization") != f"Bearer {NTFY_TOKEN}":
            error = {"code": 40301, "http": 403, "error": "forbidden"}
            return web.json_response(error, status=403)
        title = str(email.header.make_header(email.header.decode_header(request.headers["Title"])))
        fields = {
            "topic": request.match_info["topic"],
            "message": (await request.read()).decode(),
            "title": title,
            "priority": int(request.headers["Priority"]),
            "tags": request.headers["Tags"].split(","),
            "click": request.headers.get("Click"),
        }
        self._keep("ntfy", request, fields)
        return web.json_response({"id": "sPs71M8A2T", "event": "message", **fields})

    async def gotify(self, request: web.Request) -> web.Response:
        # https://gotify.net/api-docs#/message/createMessage
        token = request.headers.get("X-Gotify-Key") or request.query.get("token")
        if token != GOTIFY_TOKEN:
            error = {
                "error": "Unauthorized",
                "errorCode": 401,
                "errorDescription": "you need to provide a valid access token",
            }
            return web.json_response(error, status=401)
        fields = await request.json()
        if not isinstance(fields.get("message"), str) or not fields["message"]:
            error = {"error": "Bad Request", "errorCode": 400, "errorDescription": "message"}
            return web.json_response(error, status=400)
        self._keep("gotify", request, fields)
        return web.json_response({"id": 25, "appid": 5, **fields})

    async def pushover(self, request: web.Request) -> web.Response:
        # https://pushover.net/api: form fields, {"status": 1} when accepted.
        form = dict(parse_qsl((await request.read()).decode(), strict_parsing=True))
        request_id = str(uuid.uuid4())
        if form.get("token") != PUSHOVER_TOKEN:
            error = {"token": "invalid", "errors": ["application token is invalid"], "status": 0}
            return web.json_response({**error, "request": request_id}, status=400)
        if form.get("user") != PUSHOVER_USER:
            error = {"user": "invalid", "errors": ["user identifier is invalid"], "status": 0}
            return web.json_response({**error, "request": request_id}, status=400)
        self._keep("pushover", request, form)
        return web.json_response({"status": 1, "request": request_id})

    async def matrix(self, request: web.Request) -> web.Response:
        # https://spec.matrix.org/v1.11/client-server-api/#put_matrixclientv3roomsroomidsendeventtypetxnid
        if request.headers.get("Authorization") != f"Bearer {MATRIX_TOKEN}":
            error = {"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed."}
            return web.json_response(error, status=401)
        txn = request.match_info["txn"]
        if txn in self.matrix_events:  # the same transaction: the same event, not a new one
            return web.json_response({"event_id": self.matrix_events[txn]})
        fields = {"room": request.match_info["room"], "txn": txn, **await request.json()}
        self._keep("matrix", request, fields)
        self.matrix_events[txn] = f"$event{len(self.matrix_events)}"
        return web.json_response({"event_id": self.matrix_events[txn]})

    async def mattermost(self, request: web.Request) -> web.Response:
        # https://developers.mattermost.com/integrate/webhooks/incoming/
        if request.match_info["key"] != MATTERMOST_KEY:
            error = {"id": "web.incoming_webhook.invalid.app_error", "message": "Invalid webhook."}
            return web.json_response({**error, "status_code": 400}, status=400)
        fields = await request.json()
        self._keep("mattermost", request, fields)
        return web.Response(text="ok", content_type="text/plain")


@pytest.fixture
async def services() -> AsyncIterator[Services]:
    services = Services()
    runner = web.AppRunner(services.app(), shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    services.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield services
    await runner.cleanup()


@pytest.fixture
async def kit(tmp_path: Path, services: Services) -> AsyncIterator[DeliveryKit]:
    settings = make_settings(
        "sqlite:///unused.db",
        tmp_path,
        allow_private_targets=True,
        pushover_api_url=services.url,
        alert_timeout_seconds=5.0,
    )
    http = guarded_session(NetworkGuard(allow_private=True, loopback_only=True))
    yield DeliveryKit(settings=settings, http=http, smtp=SmtpTransport(settings))
    await http.close()


def configs(url: str) -> dict[str, dict[str, Any]]:
    """A valid config for each of the five channels, pointing at ``url``."""
    return {
        "ntfy": {"serverUrl": url, "topic": "upwatch-shop-alerts", "accessToken": NTFY_TOKEN},
        "gotify": {"serverUrl": f"{url}/gotify/", "appToken": GOTIFY_TOKEN},
        "pushover": {"userKey": PUSHOVER_USER, "appToken": PUSHOVER_TOKEN},
        "matrix": {"homeserverUrl": url, "roomId": MATRIX_ROOM, "accessToken": MATRIX_TOKEN},
        "mattermost": {"webhookUrl": f"{url}/hooks/{MATTERMOST_KEY}"},
    }


SECRETS = {
    "ntfy": NTFY_TOKEN,
    "gotify": GOTIFY_TOKEN,
    "pushover": PUSHOVER_TOKEN,
    "matrix": MATRIX_TOKEN,
    "mattermost": MATTERMOST_KEY,
}
CHANNELS = sorted(SECRETS)


async def failure_of(
    channel: str, config: dict[str, Any], event: AlertEvent, kit: DeliveryKit
) -> TransportError:
    with pytest.raises(TransportError) as caught:
        await deliver(channel, config, event, kit)
    assert SECRETS[channel] not in caught.value.message
    return caught.value


# --- Each channel sends what its service documents ----------------------------------------


async def test_an_ntfy_message_is_published_to_the_topic_with_title_priority_tags_and_link(
    kit: DeliveryKit, services: Services
) -> None:
    await deliver("ntfy", configs(services.url)["ntfy"], opened_event(), kit)

    sent = services.only("ntfy")
    assert (sent.method, sent.path) == ("POST", "/upwatch-shop-alerts")
    assert sent.fields["title"] == "DOWN: Checkout API"
    assert sent.fields["priority"] == 5  # a critical incident is ntfy's max priority
    assert sent.fields["tags"] == ["rotating_light"]
    assert sent.fields["click"] == INCIDENT_URL
    assert sent.fields["message"].startswith("unexpected HTTP status")
    assert f"Incident: {INCIDENT_URL}" in sent.fields["message"]
    assert sent.headers["X-Upwatch-Delivery"] == "alrt_4f1c9a2e7b"


async def test_an_ntfy_title_outside_latin_1_arrives_whole(
    kit: DeliveryKit, services: Services
) -> None:
    event = opened_event(monitor_name="Kasse — Zahlungen über 🛒", severity="low")

    await deliver("ntfy", configs(services.url)["ntfy"], event, kit)

    assert services.only("ntfy").fields["title"] == "DOWN: Kasse — Zahlungen über 🛒"
    assert services.only("ntfy").fields["priority"] == 2


async def test_ntfy_without_a_server_url_publishes_to_ntfy_sh() -> None:
    stored = REGISTRY["ntfy"].validate({"topic": "upwatch-shop-alerts"})

    assert stored == {"serverUrl": "https://ntfy.sh", "topic": "upwatch-shop-alerts"}
    assert REGISTRY["ntfy"].urls(stored) == [("serverUrl", "https://ntfy.sh")]


async def test_a_gotify_message_carries_the_token_in_its_header_and_a_click_url(
    kit: DeliveryKit, services: Services
) -> None:
    await deliver("gotify", configs(services.url)["gotify"], opened_event(), kit)

    sent = services.only("gotify")
    assert (sent.method, sent.path) == ("POST", "/gotify/message")
    assert "token" not in sent.path  # the token never stands in a URL
    assert sent.fields["title"] == "DOWN: Checkout API"
    assert sent.fields["priority"] == 10
    assert "What failed: unexpected HTTP status" in sent.fields["message"]
    assert sent.fields["extras"]["client::notification"] == {"click": {"url": INCIDENT_URL}}
    assert sent.fields["extras"]["client::display"] == {"contentType": "text/plain"}


async def test_a_gotify_recovery_is_heard_without_a_pop_up(
    kit: DeliveryKit, services: Services
) -> None:
    await deliver("gotify", configs(services.url)["gotify"], resolved_event(), kit)

    sent = services.only("gotify")
    assert sent.fields["title"] == "UP: Checkout API is back after 1h"
    assert sent.fields["priority"] == 5


async def test_a_pushover_message_is_a_form_post_with_token_user_title_priority_and_url(
    kit: DeliveryKit, services: Services
) -> None:
    config = {**configs(services.url)["pushover"], "device": "pixel7,ipad"}

    await deliver("pushover", config, opened_event(severity="medium"), kit)

    sent = services.only("pushover")
    assert (sent.method, sent.path) == ("POST", "/1/messages.json")
    assert sent.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert sent.fields == {
        "token": PUSHOVER_TOKEN,
        "user": PUSHOVER_USER,
        "device": "pixel7,ipad",
        "title": "DOWN: Checkout API",
        "message": sent.fields["message"],
        "priority": "0",
        "timestamp": str(int((SINCE + timedelta(minutes=1)).timestamp())),
        "url": INCIDENT_URL,
        "url_title": "Open the incident in Upwatch",
    }
    assert len(sent.fields["message"]) <= 1024
    assert sent.fields["message"].startswith("unexpected HTTP status")


async def test_a_long_pushover_message_fits_1024_characters(
    kit: DeliveryKit, services: Services
) -> None:
    event = opened_event(monitor_target="https://shop.example.com/" + "a" * 2000)

    await deliver("pushover", configs(services.url)["pushover"], event, kit)

    message = services.only("pushover").fields["message"]
    assert len(message) <= 1024
    assert "Project: Shop" in message


async def test_a_matrix_message_is_put_in_the_room_with_a_bearer_token_and_html(
    kit: DeliveryKit, services: Services
) -> None:
    event = opened_event(monitor_name="<b>Checkout</b> & co")

    await deliver("matrix", configs(services.url)["matrix"], event, kit)

    sent = services.only("matrix")
    assert sent.method == "PUT"
    assert sent.path == (
        f"/_matrix/client/v3/rooms/{MATRIX_ROOM}/send/m.room.message/alrt_4f1c9a2e7b"
    )
    assert sent.headers["Content-Type"] == "application/json"
    assert sent.fields["room"] == MATRIX_ROOM
    assert sent.fields["msgtype"] == "m.text"
    assert sent.fields["body"].startswith("DOWN: <b>Checkout</b> & co\n")
    assert sent.fields["format"] == "org.matrix.custom.html"
    html = sent.fields["formatted_body"]
    assert "DOWN: &lt;b&gt;Checkout&lt;/b&gt; &amp; co" in html  # user text is escaped
    assert f'<a href="{INCIDENT_URL}">Open the incident in Upwatch</a>' in html


async def test_a_matrix_retry_of_the_same_alert_is_not_shown_twice(
    kit: DeliveryKit, services: Services
) -> None:
    config = configs(services.url)["matrix"]

    await deliver("matrix", config, opened_event(), kit)
    await deliver("matrix", config, opened_event(), kit)  # a retry after a lost answer
    await deliver("matrix", config, resolved_event(), kit)

    assert services.attempts == 3
    assert [d.fields["txn"] for d in services.delivered] == ["alrt_4f1c9a2e7b", "alrt_9d0e3b5a61"]


async def test_a_mattermost_post_has_escaped_text_a_username_and_the_facts_as_its_card(
    kit: DeliveryKit, services: Services
) -> None:
    event = opened_event(monitor_name="@all *checkout*")

    await deliver("mattermost", configs(services.url)["mattermost"], event, kit)

    sent = services.only("mattermost")
    assert (sent.method, sent.path) == ("POST", f"/hooks/{MATTERMOST_KEY}")
    assert sent.fields["username"] == "Upwatch"
    text = sent.fields["text"]
    assert text.startswith("#### DOWN: @\u200ball \\*checkout\\*\n")
    assert "@all" not in text  # nobody is mentioned
    assert text.endswith(f"[Open the incident in Upwatch]({INCIDENT_URL})")
    assert "**Severity:** critical" in sent.fields["props"]["card"]


# --- Failures say whether a retry can help, and never carry the credential ------------------


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_service_error_is_retryable(
    kit: DeliveryKit, services: Services, channel: str
) -> None:
    services.fail = (503, '{"error": "service unavailable"}')

    error = await failure_of(channel, configs(services.url)[channel], opened_event(), kit)

    assert error.retryable
    assert error.message.startswith(f"{REGISTRY[channel].label}: HTTP 503")
    assert services.delivered == []


def wrong(channel: str, url: str) -> dict[str, Any]:
    """The config of ``channel`` with a credential the service refuses."""
    config = configs(url)[channel]
    match channel:
        case "mattermost":
            return {"webhookUrl": f"{url}/hooks/{'z' * 26}"}
        case "pushover":
            return {**config, "userKey": "u" * 30}
        case "gotify":
            return {**config, "appToken": "A" * 15}
        case _:
            return {**config, "accessToken": "tk_" + "x" * 29}


@pytest.mark.parametrize(
    ("channel", "words"),
    [
        ("ntfy", "HTTP 403: forbidden (code 40301)"),
        ("gotify", "HTTP 401: Unauthorized you need to provide a valid access token"),
        ("pushover", "HTTP 400: user identifier is invalid"),
        ("matrix", "HTTP 401: Invalid access token passed. (code M_UNKNOWN_TOKEN)"),
        ("mattermost", "HTTP 400: Invalid webhook."),
    ],
)
async def test_a_refused_credential_is_not_retried_and_says_what_the_service_said(
    kit: DeliveryKit, services: Services, channel: str, words: str
) -> None:
    error = await failure_of(channel, wrong(channel, services.url), opened_event(), kit)

    assert not error.retryable
    assert words in error.message
    assert services.delivered == []


async def test_a_pushover_answer_without_status_1_is_not_taken_for_a_delivery(
    kit: DeliveryKit, services: Services
) -> None:
    services.fail = (200, '{"status": 0, "errors": ["message cannot be blank"]}')

    error = await failure_of("pushover", configs(services.url)["pushover"], opened_event(), kit)

    assert not error.retryable
    assert "message cannot be blank" in error.message


@pytest.mark.parametrize("channel", CHANNELS)
async def test_an_internal_address_is_refused_when_the_guard_is_on_and_nothing_is_sent(
    kit: DeliveryKit, services: Services, channel: str
) -> None:
    # Loopback-only as well, so that nothing could leave this machine even if the guard erred.
    strict = NetworkGuard(allow_private=False, loopback_only=True)
    async with guarded_session(strict) as http:
        error = await failure_of(
            channel, configs(services.url)[channel], opened_event(), replace(kit, http=http)
        )

    assert not error.retryable
    assert "the address is refused" in error.message
    assert services.attempts == 0


# --- Through the API: masked, kept, guarded -----------------------------------------------

PUBLIC = "https://push.example.org"


async def _upgrade(client: httpx.AsyncClient, cast: Cast) -> None:
    response = await client.post("/subscriptions/upgrade", headers=cast.alice.headers, json={})
    assert response.status_code == 200, response.text


async def _stored_config(runtime: Runtime, provider_id: str) -> dict[str, Any]:
    from upwatch.models import NotificationProvider

    async with runtime.db.sessionmaker() as session:
        stored = await session.get(NotificationProvider, provider_id)
        assert stored is not None
        return dict(stored.config)


@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_provider_shows_its_secret_masked_and_keeps_it_when_sent_back_masked(
    client: httpx.AsyncClient, cast: Cast, runtime: Runtime, channel: str
) -> None:
    await _upgrade(client, cast)
    config = configs(PUBLIC)[channel]
    provider = await create_provider(
        client, cast.alice.headers, cast.project_id, type=channel, name="Alerts", config=config
    )
    url = f"/notification-providers/{provider['id']}"
    read = (await client.get(url, headers=cast.bob.headers)).json()
    listed = (await client.get("/notification-providers/user", headers=cast.bob.headers)).json()
    for shown in (provider["config"], read["config"], listed[0]["config"]):
        assert SECRETS[channel] not in json.dumps(shown)
        assert "****" in json.dumps(shown)

    renamed = await client.patch(
        url, headers=cast.alice.headers, json={"name": "Renamed", "config": read["config"]}
    )

    assert renamed.status_code == 200, renamed.text
    assert await _stored_config(runtime, provider["id"]) == config


@pytest.mark.parametrize(
    ("channel", "move"),
    [
        ("ntfy", {"serverUrl": "https://ntfy.bob.example"}),
        ("gotify", {"serverUrl": "https://gotify.bob.example"}),
        ("pushover", {"userKey": "b" * 30}),
        ("matrix", {"homeserverUrl": "https://matrix.bob.example"}),
    ],
)
async def test_a_masked_secret_does_not_follow_a_provider_to_a_new_destination(
    client: httpx.AsyncClient, cast: Cast, channel: str, move: dict[str, str]
) -> None:
    await _upgrade(client, cast)
    provider = await create_provider(
        client,
        cast.alice.headers,
        cast.project_id,
        type=channel,
        name="Alerts",
        config=configs(PUBLIC)[channel],
    )
    url = f"/notification-providers/{provider['id']}"

    response = await client.patch(
        url, headers=cast.bob.headers, json={"config": {**provider["config"], **move}}
    )

    assert "give the secret again" in assert_problem(response, 422)["detail"]


# Pushover's API address is the operator's (a setting), not the user's: no URL to refuse.
@pytest.mark.parametrize("channel", [c for c in CHANNELS if c != "pushover"])
@pytest.mark.parametrize("address", ["http://127.0.0.1:8080", "http://169.254.169.254"])
async def test_a_server_at_an_internal_address_is_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, channel: str, address: str
) -> None:
    await _upgrade(client, cast)
    body = {"projectId": cast.project_id, "type": channel, "name": "Alerts"}

    response = await client.post(
        "/notification-providers",
        headers=cast.alice.headers,
        json={**body, "config": configs(address)[channel]},
    )

    assert "refused" in assert_problem(response, 422)["detail"]


async def test_the_new_channels_need_a_paid_plan(client: httpx.AsyncClient, cast: Cast) -> None:
    for channel in CHANNELS:
        response = await client.post(
            "/notification-providers",
            headers=cast.alice.headers,
            json={
                "projectId": cast.project_id,
                "type": channel,
                "name": "Alerts",
                "config": configs(PUBLIC)[channel],
            },
        )
        assert_problem(response, 402)


@pytest.mark.parametrize(
    ("channel", "config", "where"),
    [
        ("ntfy", {"topic": "has spaces"}, "config.topic"),
        ("ntfy", {"serverUrl": "ftp://ntfy.example", "topic": "ok"}, "config.serverUrl"),
        ("gotify", {"serverUrl": PUBLIC}, "config.appToken"),
        ("pushover", {"userKey": "short", "appToken": PUSHOVER_TOKEN}, "config.userKey"),
        ("pushover", {**configs(PUBLIC)["pushover"], "device": "a b"}, "config.device"),
        ("matrix", {**configs(PUBLIC)["matrix"], "roomId": "#ops:example.org"}, "config.roomId"),
        ("mattermost", {"webhookUrl": "not a url"}, "config.webhookUrl"),
    ],
)
async def test_a_config_that_does_not_suit_the_service_is_refused_with_422(
    client: httpx.AsyncClient, cast: Cast, channel: str, config: dict[str, Any], where: str
) -> None:
    await _upgrade(client, cast)
    response = await client.post(
        "/notification-providers",
        headers=cast.alice.headers,
        json={"projectId": cast.project_id, "type": channel, "name": "Alerts", "config": config},
    )

    assert where in [error["field"] for error in assert_problem(response, 422)["errors"]]


# --- As a member's personal channel -------------------------------------------------------


async def test_ntfy_gotify_and_pushover_serve_as_personal_channels_masked_and_guarded(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    personal = {name: configs(PUBLIC)[name] for name in ("ntfy", "gotify", "pushover")}
    response = await change_settings(
        client,
        cast.alice,
        notifications=dict.fromkeys(personal, True),
        **{f"{name}Config": config for name, config in personal.items()},
    )
    assert response.status_code == 200, response.text
    settings = response.json()
    for name in personal:
        assert SECRETS[name] not in json.dumps(settings[f"{name}Config"])
        assert settings["channelStatus"][name] == {"active": True, "reason": None}
    assert "matrixConfig" not in settings
    assert "mattermostConfig" not in settings

    internal = {"serverUrl": "http://10.0.0.7", "topic": "mine"}
    refused = await change_settings(client, cast.alice, ntfyConfig=internal)

    assert "ntfyConfig.serverUrl" in [e["field"] for e in assert_problem(refused, 422)["errors"]]


# --- In the console -------------------------------------------------------------------------


async def test_the_console_adds_an_ntfy_provider_with_ntfy_sh_when_the_server_is_left_blank(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await _upgrade(client, cast)
    csrf = await signed_in(client, cast.alice.email)
    form = await client.get("/app/notifications/new?type=ntfy")
    for name in ("serverUrl", "topic", "accessToken"):
        assert f'name="config.{name}"' in form.text
    fields = {"type": "ntfy", "projectId": cast.project_id, "name": "Phones"}
    token = {"config.serverUrl": "", "config.accessToken": NTFY_TOKEN}

    refused = await submit(client, "/app/notifications/new", csrf, **fields, **token)
    made = await submit(
        client, "/app/notifications/new", csrf, **fields, **token, **{"config.topic": "ops"}
    )

    assert refused.status_code == 422
    assert 'id="e-config.topic"' in refused.text
    assert NTFY_TOKEN not in refused.text
    assert made.status_code == 303, made.text
    listed = await client.get("/notification-providers/user", headers=cast.alice.headers)
    [provider] = listed.json()
    assert provider["config"] == {
        "serverUrl": "https://ntfy.sh",
        "topic": "ops",
        "accessToken": REGISTRY["ntfy"].masked({"accessToken": NTFY_TOKEN})["accessToken"],
    }


async def test_the_settings_page_sets_a_personal_pushover_and_a_blank_token_keeps_the_stored_one(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.bob.email)
    page = await client.get("/app/settings")
    for name in ("userKey", "appToken", "device"):
        assert f'name="pushoverConfig.{name}"' in page.text
    assert 'name="matrixConfig.roomId"' not in page.text  # not a personal channel
    fields = {
        "timezone": "UTC",
        "language": "en",
        "theme": "light",
        "preferredNotification": "pushover",
        "notifications.pushover": "true",
        "pushoverConfig.userKey": PUSHOVER_USER,
        "pushoverConfig.appToken": PUSHOVER_TOKEN,
        "pushoverConfig.device": "",
        "emailConfig.to": "",
    }

    saved = await submit(client, "/app/settings", csrf, **fields)
    again = await submit(client, "/app/settings", csrf, **{**fields, "pushoverConfig.appToken": ""})

    assert saved.status_code == 303, saved.text
    assert again.status_code == 303, again.text
    assert PUSHOVER_TOKEN not in (await client.get("/app/settings")).text
    settings = (await client.get("/users/settings", headers=cast.bob.headers)).json()
    assert settings["preferredNotification"] == "pushover"
    assert settings["channelStatus"]["pushover"] == {"active": True, "reason": None}
    assert settings["pushoverConfig"] == REGISTRY["pushover"].masked(
        {"userKey": PUSHOVER_USER, "appToken": PUSHOVER_TOKEN}
    )
