"""Rocket.Chat, Google Chat and Opsgenie deliver to a local server standing in for each
service, and their requests are the ones the services document:

* Rocket.Chat incoming webhooks: POST JSON ``text``, ``alias``, ``emoji``, ``attachments``
  (https://docs.rocket.chat/docs/integrations);
* Google Chat incoming webhooks: POST JSON ``text`` and ``cardsV2`` to the space's URL, with
  ``threadKey`` and ``messageReplyOption`` in the query
  (https://developers.google.com/workspace/chat/quickstart/webhooks);
* Opsgenie Alert API v2: ``POST /v2/alerts`` and ``POST /v2/alerts/{alias}/close?
  identifierType=alias``, ``Authorization: GenieKey <key>``
  (https://docs.opsgenie.com/docs/alert-api).

No database is needed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import make_settings
from tests.notifications.test_transports import (
    INCIDENT_URL,
    Receiver,
    channel_test_event,
    opened_event,
    receiving,
    resolved_event,
)
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.mail.sender import SmtpTransport
from upwatch.notifications.channels import DeliveryKit, TransportError, deliver

API_KEY = "eb243592-faa2-4ba2-a551-1afdf565c889"
ROCKET_PATH = "/hooks/6a1b2c3d4e5f/Xk9vQ2rT7wLmN4pZs8YhBc1DqWeRtYuI"
GOOGLE_PATH = "/v1/spaces/AAAA1234567/messages"
GOOGLE_QUERY = "key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&token=Zx8Qw1Ab2Cd3Ef4Gh5Ij6Kl7"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving() as served:
        yield served


@pytest.fixture
async def kit(tmp_path: Path, receiver: Receiver) -> AsyncIterator[DeliveryKit]:
    settings = make_settings(
        "sqlite:///unused.db",
        tmp_path,
        allow_private_targets=True,
        opsgenie_api_url=receiver.url,
        alert_timeout_seconds=5.0,
    )
    http = guarded_session(NetworkGuard(allow_private=True, loopback_only=True))
    yield DeliveryKit(settings=settings, http=http, smtp=SmtpTransport(settings))
    await http.close()


def rocket(receiver: Receiver) -> dict[str, Any]:
    return {"webhookUrl": f"{receiver.url}{ROCKET_PATH}"}


def google(receiver: Receiver) -> dict[str, Any]:
    return {"webhookUrl": f"{receiver.url}{GOOGLE_PATH}?{GOOGLE_QUERY}"}


OPSGENIE = {"apiKey": API_KEY, "region": "eu"}


async def failure_of(
    channel: str, config: dict[str, Any], kit: DeliveryKit, event: Any = None
) -> TransportError:
    with pytest.raises(TransportError) as caught:
        await deliver(channel, config, event or opened_event(), kit)
    return caught.value


# --- Rocket.Chat ---------------------------------------------------------------------------


async def test_rocket_chat_gets_a_line_of_text_and_an_attachment_coloured_by_severity(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(200, json_body={"success": True})

    await deliver("rocketchat", rocket(receiver), opened_event(severity="medium"), kit)

    request = receiver.only()
    assert (request.method, request.path) == ("POST", ROCKET_PATH)
    assert request.headers["Content-Type"] == "application/json"
    body = request.json()
    assert body["text"] == "DOWN: Checkout API"
    assert body["alias"] == "Upwatch"
    assert body["emoji"] == ":rotating_light:"
    [attachment] = body["attachments"]
    assert attachment["title"] == "DOWN: Checkout API"
    assert attachment["title_link"] == INCIDENT_URL
    assert attachment["color"] == "#ECB22E"  # medium
    assert attachment["text"] == "unexpected HTTP status: HTTP 503, expected 200"
    fields = {field["title"]: field["value"] for field in attachment["fields"]}
    assert fields["Monitor"] == "Checkout API"
    assert fields["Severity"] == "medium"
    assert fields["Down since"] == "2025-03-14T09:26:53Z"


@pytest.mark.parametrize(
    ("severity", "color"),
    [("critical", "#B91C1C"), ("high", "#E01E5A"), ("low", "#3B82F6")],
)
async def test_the_rocket_chat_colour_follows_the_severity_and_a_recovery_is_green(
    kit: DeliveryKit, receiver: Receiver, severity: str, color: str
) -> None:
    receiver.answer(200, json_body={"success": True})

    await deliver("rocketchat", rocket(receiver), opened_event(severity=severity), kit)
    await deliver("rocketchat", rocket(receiver), resolved_event(severity=severity), kit)

    opened, resolved = (r.json()["attachments"][0]["color"] for r in receiver.requests)
    assert (opened, resolved) == (color, "#2EB67D")
    assert receiver.requests[1].json()["emoji"] == ":white_check_mark:"


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (503, True), (400, False)])
async def test_a_rocket_chat_failure_says_whether_a_retry_helps_and_hides_the_token(
    kit: DeliveryKit, receiver: Receiver, status: int, retryable: bool
) -> None:
    receiver.answer(status, json_body={"success": False, "error": "Invalid integration"})

    error = await failure_of("rocketchat", rocket(receiver), kit)

    assert error.retryable is retryable
    assert error.message.startswith(f"Rocket.Chat: HTTP {status}")
    assert "Xk9vQ2rT7wLmN4pZs8YhBc1D" not in error.message


# --- Google Chat ---------------------------------------------------------------------------


async def test_google_chat_gets_a_card_in_the_incidents_thread(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(200, json_body={"name": "spaces/AAAA1234567/messages/1"})
    event = opened_event(monitor_name="Checkout <API> & co")

    await deliver("googlechat", google(receiver), event, kit)

    request = receiver.only()
    assert (request.method, request.headers["Content-Type"]) == ("POST", "application/json")
    url = urlsplit(request.path)
    assert url.path == GOOGLE_PATH
    query = parse_qs(url.query)
    # The space's key and token stay as given; the thread is the incident's.
    assert {k: v for k, v in query.items() if k in ("key", "token")} == parse_qs(GOOGLE_QUERY)
    assert query["threadKey"] == ["upwatch-inc_42"]
    assert query["messageReplyOption"] == ["REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"]
    body = request.json()
    assert body["text"] == "DOWN: Checkout <API> & co"
    [card] = body["cardsV2"]
    assert card["cardId"] == "upwatch-alert"
    assert card["card"]["header"] == {
        "title": "DOWN: Checkout <API> & co",
        "subtitle": "unexpected HTTP status: HTTP 503, expected 200",
    }
    [section] = card["card"]["sections"]
    texts = {
        w["decoratedText"]["topLabel"]: w["decoratedText"]["text"]
        for w in section["widgets"]
        if "decoratedText" in w
    }
    # A decoratedText reads HTML: the monitor's name cannot add markup.
    assert texts["Monitor"] == "Checkout &lt;API&gt; &amp; co"
    assert texts["Severity"] == "critical"
    [button] = section["widgets"][-1]["buttonList"]["buttons"]
    assert button == {"text": "Open incident", "onClick": {"openLink": {"url": INCIDENT_URL}}}


async def test_a_google_chat_recovery_goes_to_the_same_thread_and_a_test_to_none(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(200, json_body={})

    await deliver("googlechat", google(receiver), opened_event(), kit)
    await deliver("googlechat", google(receiver), resolved_event(), kit)
    await deliver("googlechat", google(receiver), channel_test_event(), kit)

    threads = [parse_qs(urlsplit(r.path).query).get("threadKey") for r in receiver.requests]
    assert threads == [["upwatch-inc_42"], ["upwatch-inc_42"], None]


@pytest.mark.parametrize(("status", "retryable"), [(503, True), (429, True), (403, False)])
async def test_a_google_chat_failure_says_whether_a_retry_helps_and_hides_the_key(
    kit: DeliveryKit, receiver: Receiver, status: int, retryable: bool
) -> None:
    problem = {"code": status, "message": "The caller does not have permission"}
    receiver.answer(status, json_body={"error": {**problem, "status": "PERMISSION_DENIED"}})

    error = await failure_of("googlechat", google(receiver), kit)

    assert error.retryable is retryable
    assert error.message.startswith(f"Google Chat: HTTP {status}: The caller does not have")
    assert "AIzaSy" not in error.message
    assert "Zx8Qw1" not in error.message


# --- Opsgenie ------------------------------------------------------------------------------


async def test_an_opsgenie_alert_is_created_then_closed_by_the_same_alias(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(202, json_body={"result": "Request will be processed", "requestId": "r1"})

    await deliver("opsgenie", OPSGENIE, opened_event(), kit)
    await deliver("opsgenie", OPSGENIE, resolved_event(), kit)

    create, close = receiver.requests
    for request in (create, close):
        assert request.method == "POST"
        assert request.headers["Authorization"] == f"GenieKey {API_KEY}"
        assert request.headers["Content-Type"] == "application/json"
    assert create.path == "/v2/alerts"
    alert = create.json()
    assert alert["message"] == "DOWN: Checkout API"
    assert alert["alias"] == "upwatch-inc_42"
    assert alert["priority"] == "P1"  # critical
    assert alert["source"] == "Upwatch"
    assert alert["entity"] == "Checkout API"
    assert alert["tags"] == ["upwatch", "severity:critical", "monitor:http"]
    assert "What failed: unexpected HTTP status: HTTP 503, expected 200" in alert["description"]
    assert alert["details"]["Incident"] == INCIDENT_URL
    assert alert["details"]["Target"] == "https://shop.example.com/api/health"
    assert close.path == "/v2/alerts/upwatch-inc_42/close?identifierType=alias"
    assert close.json() == {"source": "Upwatch", "note": "UP: Checkout API is back after 1h 2m 3s"}


@pytest.mark.parametrize(
    ("severity", "priority"), [("critical", "P1"), ("high", "P2"), ("medium", "P3"), ("low", "P4")]
)
async def test_the_opsgenie_priority_follows_the_severity(
    kit: DeliveryKit, receiver: Receiver, severity: str, priority: str
) -> None:
    receiver.answer(202, json_body={"result": "Request will be processed"})

    await deliver("opsgenie", OPSGENIE, opened_event(severity=severity), kit)

    assert receiver.only().json()["priority"] == priority


async def test_an_opsgenie_test_alert_is_closed_right_after_it_is_created(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(202, json_body={"result": "Request will be processed"})

    await deliver("opsgenie", OPSGENIE, channel_test_event(), kit)

    create, close = receiver.requests
    assert create.json()["alias"] == "upwatch-test-alrt_test_51c2"
    assert create.json()["priority"] == "P5"
    assert close.path == "/v2/alerts/upwatch-test-alrt_test_51c2/close?identifierType=alias"


@pytest.mark.parametrize(
    ("status", "retryable"), [(500, True), (503, True), (429, True), (401, False), (422, False)]
)
async def test_an_opsgenie_failure_says_whether_a_retry_helps_and_hides_the_key(
    kit: DeliveryKit, receiver: Receiver, status: int, retryable: bool
) -> None:
    receiver.answer(status, json_body={"message": f"Key {API_KEY} is not valid", "took": 0.0})

    error = await failure_of("opsgenie", OPSGENIE, kit)

    assert error.retryable is retryable
    assert error.message.startswith(f"Opsgenie: HTTP {status}: Key ")
    assert API_KEY not in error.message


@pytest.mark.parametrize(
    ("region", "host"), [("us", "api.opsgenie.com"), ("eu", "api.eu.opsgenie.com")]
)
async def test_the_opsgenie_region_picks_the_api_host(
    kit: DeliveryKit, tmp_path: Path, region: str, host: str
) -> None:
    # Without the test's base URL the region's host is contacted, which the loopback-only
    # guard refuses before anything leaves this machine; the refusal names the host.
    settings = make_settings("sqlite:///unused.db", tmp_path, allow_private_targets=False)
    strict = NetworkGuard(allow_private=False, loopback_only=True)
    async with guarded_session(strict) as http:
        error = await failure_of(
            "opsgenie",
            {"apiKey": API_KEY, "region": region},
            replace(kit, settings=settings, http=http),
        )

    assert not error.retryable
    assert f"the address is refused ({host}: only loopback targets" in error.message


# --- Every one of them: the guard ----------------------------------------------------------


@pytest.mark.parametrize("channel", ["rocketchat", "googlechat", "opsgenie"])
async def test_an_internal_address_is_refused_when_sending_and_nothing_is_sent(
    kit: DeliveryKit, receiver: Receiver, channel: str
) -> None:
    strict = NetworkGuard(allow_private=False, loopback_only=True)
    config = {"rocketchat": rocket(receiver), "googlechat": google(receiver)}.get(channel, OPSGENIE)
    async with guarded_session(strict) as http:
        error = await failure_of(channel, config, replace(kit, http=http))

    assert not error.retryable
    assert "the address is refused" in error.message
    assert receiver.requests == []
