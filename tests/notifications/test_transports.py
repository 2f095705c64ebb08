"""The nine alert transports deliver real messages to local servers standing in for the services.

One aiohttp server on loopback plays Slack, Discord, Teams, Telegram, PagerDuty, Twilio and any
webhook receiver: it records every request and answers what the test tells it. Email goes to
the aiosmtpd server of the ``smtp`` fixture. No database is needed.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args
from urllib.parse import parse_qsl

import pytest
from aiohttp import web
from multidict import CIMultiDictProxy
from standardwebhooks import Webhook, WebhookVerificationError

from tests.conftest import SmtpServer, free_port, make_settings
from upwatch.config import Settings
from upwatch.kit.clock import ManualClock
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.mail.sender import SmtpTransport
from upwatch.notifications.channels import (
    REGISTRY,
    ChannelName,
    DeliveryKit,
    TransportError,
    deliver,
    plan_channels,
)
from upwatch.notifications.events import AlertEvent, EventKind, Failure
from upwatch.notifications.schemas import NewProvider

SINCE = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)
RECOVERED = SINCE + timedelta(hours=1, minutes=2, seconds=3)
INCIDENT_URL = "http://upwatch.test/projects/prj_7/incidents/inc_42"

BOT_TOKEN = "7301946825:AAH3kqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
ROUTING_KEY = "e93facc04764012d7bfb002500d5d1a6"
ACCOUNT_SID = "AC3f0e5b1c9a7d4e2f8b6a0c1d2e3f4a5b"
AUTH_TOKEN = "f2b9c6e1d0a84a7fb3e5c2d1a9e8b7c6"
SLACK_PATH = "/services/T024BE7LD/B08QJ2K3M/Xk9vQ2rT7wLmN4pZs8YhBc1D"
WEBHOOK_SECRET = "whsec-8f3a2c1d9e7b"


def opened_event(**changes: Any) -> AlertEvent:
    event = AlertEvent(
        kind=EventKind.OPENED,
        delivery_id="alrt_4f1c9a2e7b",
        occurred_at=SINCE + timedelta(minutes=1),
        project_id="prj_7",
        project_name="Shop",
        monitor_id="mon_3",
        monitor_name="Checkout API",
        monitor_type="http",
        monitor_target="https://shop.example.com/api/health",
        incident_id="inc_42",
        incident_title="Checkout API is down",
        incident_url=INCIDENT_URL,
        severity="critical",
        failure=Failure(kind="status_code", message="expected 200", status_code=503),
        since=SINCE,
    )
    return replace(event, **changes)


def resolved_event(**changes: Any) -> AlertEvent:
    event = replace(
        opened_event(),
        kind=EventKind.RESOLVED,
        delivery_id="alrt_9d0e3b5a61",
        occurred_at=RECOVERED,
        resolved_at=RECOVERED,
    )
    return replace(event, **changes)


def channel_test_event() -> AlertEvent:
    """What the "send a test" button delivers: no monitor, no incident."""
    return AlertEvent(
        kind=EventKind.TEST,
        delivery_id="alrt_test_51c2",
        occurred_at=SINCE,
        project_id="prj_7",
        project_name="Shop",
    )


@dataclass
class Received:
    method: str
    path: str
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode(), keep_blank_values=True, strict_parsing=True))


@dataclass
class Receiver:
    """A local stand-in for a chat, paging or webhook service."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    status: int = 200
    body: bytes = b"ok"
    content_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def answer(
        self,
        status: int,
        text: str = "",
        *,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.headers = headers or {}
        if json_body is not None:
            self.body, self.content_type = json.dumps(json_body).encode(), "application/json"
        else:
            self.body, self.content_type = text.encode(), "text/plain"

    def only(self) -> Received:
        assert len(self.requests) == 1, self.requests
        return self.requests[0]

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(
            Received(request.method, request.path_qs, request.headers, await request.read())
        )
        if self.stall:
            await self.release.wait()
        return web.Response(
            status=self.status,
            body=self.body,
            content_type=self.content_type,
            headers=self.headers,
        )


@asynccontextmanager
async def receiving() -> AsyncIterator[Receiver]:
    """A receiver listening on loopback, for the channel tests of this and other modules."""
    receiver = Receiver()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", receiver.handle)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    receiver.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield receiver
    receiver.release.set()
    await runner.cleanup()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving() as served:
        yield served


def settings_for(
    tmp_path: Path, smtp: SmtpServer, receiver: Receiver, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "smtp_host": "127.0.0.1",
        "smtp_port": smtp.port,
        "allow_private_targets": True,
        "telegram_api_url": receiver.url,
        "pagerduty_events_url": receiver.url,
        "twilio_api_url": receiver.url,
        "alert_timeout_seconds": 5.0,
        **overrides,
    }
    return make_settings("sqlite:///unused.db", tmp_path, **values)


@pytest.fixture
async def kit(tmp_path: Path, smtp: SmtpServer, receiver: Receiver) -> AsyncIterator[DeliveryKit]:
    settings = settings_for(tmp_path, smtp, receiver)
    http = guarded_session(NetworkGuard(allow_private=True, loopback_only=True))
    yield DeliveryKit(settings=settings, http=http, smtp=SmtpTransport(settings))
    await http.close()


def with_settings(kit: DeliveryKit, settings: Settings) -> DeliveryKit:
    return replace(kit, settings=settings, smtp=SmtpTransport(settings))


def closed_url() -> str:
    """A loopback port nobody listens on: the connection is refused."""
    return f"http://127.0.0.1:{free_port()}"


def configs(receiver: Receiver) -> dict[str, dict[str, Any]]:
    """A valid config for every HTTP channel, all pointing at the receiver."""
    twilio = {"to": "+14155550100", "from": "+14155550199", "accountSid": ACCOUNT_SID}
    return {
        "slack": {"webhookUrl": f"{receiver.url}{SLACK_PATH}"},
        "discord": {"webhookUrl": f"{receiver.url}/api/webhooks/1234567/tOkEn-Discord_abc"},
        "teams": {"webhookUrl": f"{receiver.url}/workflows/abc/triggers/manual?sig=s1gnature"},
        "webhook": {"url": f"{receiver.url}/hooks/upwatch", "secret": WEBHOOK_SECRET},
        "telegram": {"botToken": BOT_TOKEN, "chatId": "-1001234567890"},
        "pagerduty": {"routingKey": ROUTING_KEY},
        "sms": {**twilio, "authToken": AUTH_TOKEN},
        "whatsapp": {**twilio, "authToken": AUTH_TOKEN},
    }


async def failure_of(
    channel: str, config: dict[str, Any], event: AlertEvent, kit: DeliveryKit
) -> TransportError:
    with pytest.raises(TransportError) as caught:
        await deliver(channel, config, event, kit)
    assert str(caught.value) == caught.value.message
    assert len(caught.value.message) <= 500
    return caught.value


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- Each channel delivers a message in the service's format -------------------------------


async def test_an_email_alert_arrives_with_the_headline_as_subject_and_the_facts_in_the_body(
    kit: DeliveryKit, smtp: SmtpServer
) -> None:
    to = ["oncall@example.com", "lead@example.com"]

    await deliver("email", {"to": to}, opened_event(), kit)

    [message] = await smtp.mailbox.wait_for("oncall@example.com")
    assert message["To"] == "oncall@example.com, lead@example.com"
    assert message["Subject"] == "DOWN: Checkout API"
    assert message["From"] == kit.settings.mail_from
    assert message["Message-ID"] == "<alert-alrt_4f1c9a2e7b@upwatch>"
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes)
    lines = body.decode().splitlines()
    assert lines[0] == "DOWN: Checkout API"
    assert "Monitor: Checkout API (https://shop.example.com/api/health)" in lines
    assert "What failed: unexpected HTTP status: HTTP 503, expected 200" in lines
    assert f"Incident: {INCIDENT_URL}" in lines


async def test_an_sms_is_a_twilio_form_post_with_basic_auth(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(201, json_body={"sid": "SM1f0e", "status": "queued"})

    await deliver("sms", configs(receiver)["sms"], opened_event(), kit)

    request = receiver.only()
    assert request.method == "POST"
    assert request.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    credentials = base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
    assert request.headers["Authorization"] == f"Basic {credentials}"
    form = request.form()
    assert set(form) == {"To", "From", "Body"}
    assert form["To"] == "+14155550100"
    assert form["From"] == "+14155550199"
    assert form["Body"].startswith("DOWN: Checkout API\n")
    assert "What failed: unexpected HTTP status: HTTP 503, expected 200" in form["Body"]
    assert f"Incident: {INCIDENT_URL}" in form["Body"]


async def test_an_sms_fits_1600_characters_and_keeps_the_incident_link(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(201, json_body={"sid": "SM1f0e"})
    event = opened_event(monitor_target="https://shop.example.com/" + "a" * 3000)

    await deliver("sms", configs(receiver)["sms"], event, kit)

    body = receiver.only().form()["Body"]
    assert len(body) <= 1600
    assert body.endswith(f"Incident: {INCIDENT_URL}")


async def test_a_whatsapp_message_prefixes_both_numbers(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(201, json_body={"sid": "SM2a7c", "status": "queued"})

    await deliver("whatsapp", configs(receiver)["whatsapp"], resolved_event(), kit)

    request = receiver.only()
    assert request.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
    assert request.headers["Authorization"].startswith("Basic ")
    form = request.form()
    assert form["To"] == "whatsapp:+14155550100"
    assert form["From"] == "whatsapp:+14155550199"
    assert form["Body"].startswith("UP: Checkout API is back after 1h 2m 3s\n")


async def test_a_slack_message_has_a_fallback_text_and_blocks_with_escaped_lines(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(200, "ok")
    event = opened_event(monitor_name="Shop <b> & Co")

    await deliver("slack", configs(receiver)["slack"], event, kit)

    request = receiver.only()
    assert request.path == SLACK_PATH
    assert request.headers["Content-Type"] == "application/json"
    message = request.json()
    assert message["text"] == "DOWN: Shop &lt;b&gt; &amp; Co"
    header, section, context = message["blocks"]
    assert header == {
        "type": "header",
        "text": {"type": "plain_text", "text": "DOWN: Shop <b> & Co"},
    }
    assert section["type"] == "section"
    assert section["text"]["type"] == "mrkdwn"
    assert "Monitor: Shop &lt;b&gt; &amp; Co (https://shop.example.com/api/health)" in (
        section["text"]["text"].splitlines()
    )
    assert context["type"] == "context"
    assert context["elements"] == [
        {"type": "mrkdwn", "text": f"<{INCIDENT_URL}|Open the incident in Upwatch>"}
    ]


async def test_a_webhook_posts_the_payload_with_a_valid_signature(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    config = {
        **configs(receiver)["webhook"],
        "headers": {"Authorization": "Bearer rcv-token-1"},
    }
    event = opened_event()

    await deliver("webhook", config, event, kit)

    request = receiver.only()
    assert request.path == "/hooks/upwatch"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["X-Upwatch-Event"] == "incident.opened"
    assert request.headers["X-Upwatch-Delivery"] == "alrt_4f1c9a2e7b"
    assert request.headers["Authorization"] == "Bearer rcv-token-1"
    assert hmac.compare_digest(
        request.headers["X-Upwatch-Signature"], signature(WEBHOOK_SECRET, request.body)
    )
    assert request.json() == event.payload()
    # Compact: receivers that verify the signature see the very bytes that were signed.
    assert b'": ' not in request.body
    assert b', "' not in request.body


async def test_a_webhook_without_a_secret_carries_no_signature(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    config = {"url": f"{receiver.url}/hooks/upwatch", "headers": None, "secret": None}

    await deliver("webhook", config, resolved_event(), kit)

    request = receiver.only()
    assert "X-Upwatch-Signature" not in request.headers
    assert request.headers["X-Upwatch-Event"] == "incident.resolved"
    assert request.json()["incident"]["durationSeconds"] == 3723


async def test_user_headers_cannot_override_the_signature_or_the_framing(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    config = {
        **configs(receiver)["webhook"],
        "headers": {
            "x-upwatch-signature": "sha256=forged",
            "Webhook-Signature": "v1,Zm9yZ2Vk",
            "webhook-id": "someone-else",
            "X-UPWATCH-EVENT": "incident.resolved",
            "X-Upwatch-Delivery": "someone-else",
            "content-type": "text/plain",
            "Content-Length": "3",
            "Host": "internal.example",
            "X-Team": "payments",
        },
    }

    await deliver("webhook", config, opened_event(), kit)

    request = receiver.only()
    assert request.headers.getall("X-Upwatch-Signature") == [
        signature(WEBHOOK_SECRET, request.body)
    ]
    assert request.headers.getall("X-Upwatch-Event") == ["incident.opened"]
    assert request.headers.getall("X-Upwatch-Delivery") == ["alrt_4f1c9a2e7b"]
    assert request.headers.getall("webhook-id") == ["alrt_4f1c9a2e7b"]
    assert len(request.headers.getall("webhook-signature")) == 1
    Webhook(WEBHOOK_SECRET.encode()).verify(request.body, dict(request.headers))
    assert request.headers.getall("Content-Type") == ["application/json"]
    assert request.headers["Host"] == receiver.url.removeprefix("http://")
    assert request.headers["X-Team"] == "payments"
    assert request.json()["event"] == "incident.opened"


# --- Standard Webhooks: verified by the specification's reference code ---------------------

# A secret in the specification's form: "whsec_" and 32 random bytes in base64.
STANDARD_SECRET = "whsec_" + base64.b64encode(bytes(range(7, 39))).decode()


def at(clock: ManualClock, kit: DeliveryKit) -> DeliveryKit:
    return replace(kit, clock=clock)


async def test_a_signed_webhook_verifies_with_the_standard_webhooks_reference_code(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    config = {"url": f"{receiver.url}/hooks/upwatch", "secret": STANDARD_SECRET}
    clock = ManualClock(datetime.now(UTC))
    event = opened_event()

    await deliver("webhook", config, event, at(clock, kit))

    request = receiver.only()
    headers = dict(request.headers)
    assert Webhook(STANDARD_SECRET).verify(request.body, headers) == event.payload()
    # The alert's delivery id: the same on every attempt, so a receiver can drop a repeat.
    assert request.headers["webhook-id"] == "alrt_4f1c9a2e7b"
    assert request.headers["webhook-timestamp"] == str(int(clock.now().timestamp()))
    assert request.headers["webhook-signature"].startswith("v1,")


async def test_a_plain_secret_signs_with_its_own_bytes_and_keeps_the_older_header(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    await deliver("webhook", configs(receiver)["webhook"], opened_event(), kit)

    request = receiver.only()
    # Standard Webhooks libraries take a key that is not in whsec_ form as raw bytes.
    Webhook(WEBHOOK_SECRET.encode()).verify(request.body, dict(request.headers))
    assert request.headers["X-Upwatch-Signature"] == signature(WEBHOOK_SECRET, request.body)


async def test_a_tampered_body_fails_verification(kit: DeliveryKit, receiver: Receiver) -> None:
    config = {"url": f"{receiver.url}/hooks/upwatch", "secret": STANDARD_SECRET}
    await deliver("webhook", config, opened_event(), kit)

    request = receiver.only()
    tampered = request.body.replace(b'"incident.opened"', b'"incident.resolved"')
    assert tampered != request.body
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(STANDARD_SECRET).verify(tampered, dict(request.headers))


async def test_a_delivery_replayed_later_than_the_tolerance_is_refused(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    # Captured ten minutes ago (the reference code accepts five), and replayed now.
    captured_at = ManualClock(datetime.now(UTC) - timedelta(minutes=10))
    config = {"url": f"{receiver.url}/hooks/upwatch", "secret": STANDARD_SECRET}
    await deliver("webhook", config, opened_event(), at(captured_at, kit))
    replayed = receiver.only()
    verifier = Webhook(STANDARD_SECRET)

    with pytest.raises(WebhookVerificationError, match="too old"):
        verifier.verify(replayed.body, dict(replayed.headers))
    # Nor can the replayer refresh the timestamp: it is part of what is signed.
    restamped = {**replayed.headers, "webhook-timestamp": str(int(datetime.now(UTC).timestamp()))}
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        verifier.verify(replayed.body, restamped)


def documented_check() -> Callable[..., bool]:
    """The standard-library check that docs/api.md gives receivers, run as written."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    after = text.split("With the standard library only:", 1)[1]
    code = after.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/api.md", "exec"), namespace)  # noqa: S102 (our own docs)
    check: Callable[..., bool] = namespace["verified"]
    return check


@pytest.mark.parametrize("secret", [STANDARD_SECRET, WEBHOOK_SECRET])
async def test_the_documented_standard_library_check_accepts_a_delivery_and_refuses_a_replay(
    kit: DeliveryKit, receiver: Receiver, secret: str
) -> None:
    verified = documented_check()
    config = {"url": f"{receiver.url}/hooks/upwatch", "secret": secret}
    await deliver("webhook", config, opened_event(), kit)
    captured_at = ManualClock(datetime.now(UTC) - timedelta(minutes=10))
    await deliver("webhook", config, opened_event(), at(captured_at, kit))

    fresh, replayed = receiver.requests
    assert verified(secret, dict(fresh.headers), fresh.body)
    assert not verified(secret, dict(fresh.headers), fresh.body + b" ")
    assert not verified(
        "whsec_" + base64.b64encode(b"x" * 32).decode(), dict(fresh.headers), fresh.body
    )
    assert not verified(secret, dict(replayed.headers), replayed.body)


async def test_every_attempt_at_one_alert_keeps_its_id_and_signs_its_own_time(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    clock = ManualClock(datetime.now(UTC) - timedelta(seconds=90))
    config = {"url": f"{receiver.url}/hooks/upwatch", "secret": STANDARD_SECRET}
    event = opened_event()
    receiver.answer(503, "busy")
    await failure_of("webhook", config, event, at(clock, kit))
    clock.advance(timedelta(seconds=60))
    receiver.answer(200, "ok")

    await deliver("webhook", config, event, at(clock, kit))

    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == event.delivery_id
    stamps = [int(r.headers["webhook-timestamp"]) for r in (first, second)]
    assert stamps[1] - stamps[0] == 60
    for request in (first, second):
        Webhook(STANDARD_SECRET).verify(request.body, dict(request.headers))
    assert first.headers["webhook-signature"] != second.headers["webhook-signature"]


async def test_a_discord_message_is_one_red_embed_that_mentions_nobody(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(204)

    await deliver("discord", configs(receiver)["discord"], opened_event(), kit)

    message = receiver.only().json()
    assert message["username"] == "Upwatch"
    assert message["allowed_mentions"] == {"parse": []}
    [embed] = message["embeds"]
    assert embed["title"] == "DOWN: Checkout API"
    assert embed["description"] == "unexpected HTTP status: HTTP 503, expected 200"
    assert embed["color"] == 0xE01E5A
    assert embed["url"] == INCIDENT_URL
    assert datetime.fromisoformat(embed["timestamp"]) == SINCE + timedelta(minutes=1)
    fields = {item["name"]: item["value"] for item in embed["fields"]}
    assert fields["Monitor"] == "Checkout API"
    assert fields["Target"] == "https://shop.example.com/api/health"
    assert fields["Severity"] == "critical"
    assert len(embed["fields"]) <= 25
    for item in embed["fields"]:
        assert set(item) == {"name", "value", "inline"}
        assert 0 < len(item["name"]) <= 256
        assert 0 < len(item["value"]) <= 1024


async def test_a_resolved_discord_embed_is_green_with_the_outage_length(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(204)

    await deliver("discord", configs(receiver)["discord"], resolved_event(), kit)

    [embed] = receiver.only().json()["embeds"]
    assert embed["title"] == "UP: Checkout API is back after 1h 2m 3s"
    assert embed["color"] == 0x2EB67D
    fields = {item["name"]: item["value"] for item in embed["fields"]}
    assert fields["Outage length"] == "1h 2m 3s"
    assert "Severity" not in fields


async def test_a_teams_message_is_an_adaptive_card_with_facts_and_a_link(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(202)

    await deliver("teams", configs(receiver)["teams"], opened_event(), kit)

    request = receiver.only()
    assert request.path == "/workflows/abc/triggers/manual?sig=s1gnature"
    message = request.json()
    assert message["type"] == "message"
    [attachment] = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["contentUrl"] is None
    card = attachment["content"]
    assert card["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
    assert card["type"] == "AdaptiveCard"
    assert card["version"] == "1.4"
    title = card["body"][0]
    assert title["type"] == "TextBlock"
    assert title["text"] == "DOWN: Checkout API"
    assert (title["weight"], title["size"], title["wrap"]) == ("Bolder", "Medium", True)
    [fact_set] = [block for block in card["body"] if block["type"] == "FactSet"]
    assert {"title": "Project", "value": "Shop"} in fact_set["facts"]
    assert card["actions"] == [
        {"type": "Action.OpenUrl", "title": "Open incident", "url": INCIDENT_URL}
    ]


async def test_a_teams_test_card_has_no_link_when_there_is_no_incident(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(202)

    await deliver("teams", configs(receiver)["teams"], channel_test_event(), kit)

    card = receiver.only().json()["attachments"][0]["content"]
    assert card["body"][0]["text"] == "Test alert from Upwatch (Shop)"
    assert "actions" not in card


async def test_a_telegram_message_is_plain_text_to_the_chat(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(200, json_body={"ok": True, "result": {"message_id": 42}})
    event = opened_event()

    await deliver("telegram", configs(receiver)["telegram"], event, kit)

    request = receiver.only()
    assert request.path == f"/bot{BOT_TOKEN}/sendMessage"
    assert request.json() == {
        "chat_id": "-1001234567890",
        "text": event.text,
        "disable_web_page_preview": True,
    }


async def test_a_telegram_answer_that_is_not_ok_fails_even_with_status_200(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(
        200,
        json_body={"ok": False, "error_code": 429, "description": "Too Many Requests: retry"},
    )

    error = await failure_of("telegram", configs(receiver)["telegram"], opened_event(), kit)

    assert error.retryable
    assert "Too Many Requests" in error.message


async def test_a_pagerduty_incident_triggers_and_resolves_under_one_dedup_key(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(202, json_body={"status": "success", "dedup_key": "upwatch-inc_42"})
    config = configs(receiver)["pagerduty"]

    await deliver("pagerduty", config, opened_event(), kit)
    await deliver("pagerduty", config, resolved_event(), kit)

    trigger, resolve = (request.json() for request in receiver.requests)
    assert {request.path for request in receiver.requests} == {"/v2/enqueue"}
    assert trigger["routing_key"] == ROUTING_KEY
    assert trigger["event_action"] == "trigger"
    assert trigger["dedup_key"] == "upwatch-inc_42"
    payload = trigger["payload"]
    assert payload["summary"] == "DOWN: Checkout API"
    assert payload["source"] == "https://shop.example.com/api/health"
    assert payload["severity"] == "critical"
    assert datetime.fromisoformat(payload["timestamp"]) == SINCE + timedelta(minutes=1)
    assert payload["component"] == "Checkout API"
    assert payload["group"] == "Shop"
    assert payload["class"] == "status_code"
    details = payload["custom_details"]
    assert details["What failed"] == "unexpected HTTP status: HTTP 503, expected 200"
    assert details["Down since"] == "2025-03-14T09:26:53Z"
    assert details["Incident"] == INCIDENT_URL
    assert trigger["links"] == [{"href": INCIDENT_URL, "text": "Upwatch incident"}]
    assert trigger["client"] == "Upwatch"
    assert trigger["client_url"] == "http://upwatch.test"
    assert resolve == {
        "routing_key": ROUTING_KEY,
        "event_action": "resolve",
        "dedup_key": "upwatch-inc_42",
    }


@pytest.mark.parametrize(
    ("severity", "expected"),
    [("critical", "critical"), ("high", "error"), ("medium", "warning"), ("low", "info")],
)
async def test_pagerduty_severity_follows_the_incident_severity(
    kit: DeliveryKit, receiver: Receiver, severity: str, expected: str
) -> None:
    receiver.answer(202, json_body={"status": "success"})

    await deliver("pagerduty", configs(receiver)["pagerduty"], opened_event(severity=severity), kit)

    assert receiver.only().json()["payload"]["severity"] == expected


async def test_a_pagerduty_test_alert_is_resolved_right_after_it_triggers(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(202, json_body={"status": "success"})

    await deliver("pagerduty", configs(receiver)["pagerduty"], channel_test_event(), kit)

    trigger, resolve = (request.json() for request in receiver.requests)
    assert trigger["event_action"] == "trigger"
    assert trigger["dedup_key"] == "upwatch-test-alrt_test_51c2"
    assert trigger["payload"]["severity"] == "info"
    assert trigger["payload"]["source"] == "upwatch"
    assert "links" not in trigger
    assert resolve == {
        "routing_key": ROUTING_KEY,
        "event_action": "resolve",
        "dedup_key": "upwatch-test-alrt_test_51c2",
    }


@pytest.mark.parametrize(
    "channel", ["slack", "discord", "teams", "webhook", "telegram", "pagerduty", "sms", "whatsapp"]
)
async def test_every_http_channel_carries_the_delivery_id(
    kit: DeliveryKit, receiver: Receiver, channel: str
) -> None:
    receiver.answer(200, json_body={"ok": True, "status": "success", "sid": "SM1"})

    await deliver(channel, configs(receiver)[channel], opened_event(), kit)

    assert [r.headers["X-Upwatch-Delivery"] for r in receiver.requests] == ["alrt_4f1c9a2e7b"]
    assert {r.method for r in receiver.requests} == {"POST"}


# --- Failures say whether a retry can help ------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (429, True), (408, True), (400, False), (404, False)],
)
async def test_a_webhook_answer_decides_whether_a_retry_can_help(
    kit: DeliveryKit, receiver: Receiver, status: int, retryable: bool
) -> None:
    receiver.answer(status, "receiver says no")

    error = await failure_of("webhook", configs(receiver)["webhook"], opened_event(), kit)

    assert error.retryable is retryable
    assert error.message == f"webhook: HTTP {status}: receiver says no"


@pytest.mark.parametrize("channel", ["webhook", "slack", "telegram", "sms"])
@pytest.mark.parametrize("status", [429, 503])
async def test_a_retry_after_in_seconds_is_passed_on_by_every_http_channel(
    kit: DeliveryKit, receiver: Receiver, channel: str, status: int
) -> None:
    receiver.answer(status, "slow down", headers={"Retry-After": "120"})

    error = await failure_of(channel, configs(receiver)[channel], opened_event(), kit)

    assert error.retryable
    assert error.retry_after == 120


async def test_a_retry_after_date_is_read_against_the_delivery_clock(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    clock = ManualClock(datetime(2026, 11, 27, 4, 0, tzinfo=UTC))
    receiver.answer(503, "maintenance", headers={"Retry-After": "Fri, 27 Nov 2026 04:07:30 GMT"})

    config = configs(receiver)["webhook"]

    error = await failure_of("webhook", config, opened_event(), at(clock, kit))

    assert error.retry_after == 450


@pytest.mark.parametrize(
    ("status", "retry_after"), [(500, "30"), (502, "30"), (429, "soon"), (503, None)]
)
async def test_no_wait_is_taken_from_other_answers_or_an_unreadable_header(
    kit: DeliveryKit, receiver: Receiver, status: int, retry_after: str | None
) -> None:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    receiver.answer(status, "no", headers=headers)

    error = await failure_of("webhook", configs(receiver)["webhook"], opened_event(), kit)

    assert error.retryable
    assert error.retry_after is None


async def test_a_redirect_is_not_followed_and_not_retried(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(302, headers={"Location": f"{receiver.url}/elsewhere"})

    error = await failure_of("webhook", configs(receiver)["webhook"], opened_event(), kit)

    assert not error.retryable
    assert "redirect not followed" in error.message
    assert [request.path for request in receiver.requests] == ["/hooks/upwatch"]


async def test_a_closed_port_is_retryable(kit: DeliveryKit) -> None:
    config = {"url": f"{closed_url()}/hooks/upwatch"}

    error = await failure_of("webhook", config, opened_event(), kit)

    assert error.retryable
    assert error.message == "webhook: connection refused"


async def test_a_receiver_that_does_not_answer_in_time_is_retryable(
    kit: DeliveryKit, receiver: Receiver, tmp_path: Path, smtp: SmtpServer
) -> None:
    receiver.stall = True
    quick = with_settings(kit, settings_for(tmp_path, smtp, receiver, alert_timeout_seconds=0.3))

    error = await failure_of("webhook", configs(receiver)["webhook"], opened_event(), quick)

    assert error.retryable
    assert error.message == "webhook: no answer within 0.3 s"


@pytest.mark.parametrize("url", ["http://10.1.2.3/x", "loopback"])
async def test_a_refused_address_is_not_retryable_and_nothing_is_sent(
    kit: DeliveryKit, receiver: Receiver, url: str
) -> None:
    # Loopback-only as well, so that nothing could leave this machine even if the guard erred.
    strict = NetworkGuard(allow_private=False, loopback_only=True)
    target = f"{receiver.url}/hooks/upwatch" if url == "loopback" else url
    async with guarded_session(strict) as http:
        error = await failure_of(
            "webhook", {"url": target}, opened_event(), replace(kit, http=http)
        )

    assert not error.retryable
    assert "the address is refused" in error.message
    assert receiver.requests == []


async def test_a_huge_error_body_still_makes_a_short_message(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(500, "<html>" + "oops " * 40_000)

    error = await failure_of("webhook", configs(receiver)["webhook"], opened_event(), kit)

    assert error.retryable
    assert error.message.startswith("webhook: HTTP 500: <html>oops oops")


@pytest.mark.parametrize("failure", ["refusal", "closed port", "timeout"])
async def test_a_telegram_failure_never_contains_the_bot_token(
    kit: DeliveryKit, receiver: Receiver, tmp_path: Path, smtp: SmtpServer, failure: str
) -> None:
    if failure == "refusal":
        receiver.answer(
            400,
            json_body={
                "ok": False,
                "error_code": 400,
                "description": "Bad Request: chat not found",
            },
        )
    elif failure == "closed port":
        kit = with_settings(
            kit, settings_for(tmp_path, smtp, receiver, telegram_api_url=closed_url())
        )
    else:
        receiver.stall = True
        kit = with_settings(kit, settings_for(tmp_path, smtp, receiver, alert_timeout_seconds=0.3))

    error = await failure_of("telegram", configs(receiver)["telegram"], opened_event(), kit)

    assert BOT_TOKEN not in error.message
    assert BOT_TOKEN.split(":")[1] not in error.message
    assert error.message.startswith("Telegram: ")
    if failure == "refusal":
        assert not error.retryable
        assert error.message == "Telegram: HTTP 400: Bad Request: chat not found"
    else:
        assert error.retryable


@pytest.mark.parametrize("failure", ["no_service", "closed port"])
async def test_a_slack_failure_never_contains_the_webhook_path(
    kit: DeliveryKit, receiver: Receiver, failure: str
) -> None:
    config = configs(receiver)["slack"]
    if failure == "closed port":
        config = {"webhookUrl": f"{closed_url()}{SLACK_PATH}"}
    receiver.answer(404, "no_service")

    error = await failure_of("slack", config, opened_event(), kit)

    assert "Xk9vQ2rT7wLmN4pZs8YhBc1D" not in error.message
    assert "/services/" not in error.message
    if failure == "no_service":
        assert error.message == "Slack: HTTP 404: no_service"
        assert not error.retryable
    else:
        assert error.retryable


async def test_a_twilio_refusal_carries_its_message_and_code_but_not_the_auth_token(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(
        400,
        json_body={
            "code": 21211,
            "message": "The 'To' number +14155550100 is not a valid phone number.",
            "more_info": "https://www.twilio.com/docs/errors/21211",
            "status": 400,
        },
    )

    error = await failure_of("sms", configs(receiver)["sms"], opened_event(), kit)

    assert not error.retryable
    assert "is not a valid phone number" in error.message
    assert "21211" in error.message
    assert AUTH_TOKEN not in error.message


async def test_an_invalid_pagerduty_event_is_not_retried_and_hides_the_routing_key(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    receiver.answer(
        400,
        json_body={
            "status": "invalid event",
            "message": "Event object is invalid",
            "errors": [f"'routing_key' {ROUTING_KEY} is not a known integration"],
        },
    )

    error = await failure_of("pagerduty", configs(receiver)["pagerduty"], opened_event(), kit)

    assert not error.retryable
    assert "Event object is invalid" in error.message
    assert "is not a known integration" in error.message
    assert ROUTING_KEY not in error.message


async def test_pagerduty_throttling_is_retryable(kit: DeliveryKit, receiver: Receiver) -> None:
    receiver.answer(429, json_body={"status": "throttle event", "message": "Requests throttled"})

    error = await failure_of("pagerduty", configs(receiver)["pagerduty"], opened_event(), kit)

    assert error.retryable
    assert error.message == "PagerDuty: HTTP 429: Requests throttled"


async def test_email_without_smtp_configured_is_not_retryable(
    kit: DeliveryKit, receiver: Receiver, tmp_path: Path, smtp: SmtpServer
) -> None:
    unconfigured = with_settings(kit, settings_for(tmp_path, smtp, receiver, smtp_host=""))

    error = await failure_of("email", {"to": ["oncall@example.com"]}, opened_event(), unconfigured)

    assert not error.retryable
    assert error.message == "SMTP is not configured (UPWATCH_SMTP_HOST)"


async def test_an_unreachable_mail_server_is_retryable(
    kit: DeliveryKit, receiver: Receiver, tmp_path: Path, smtp: SmtpServer
) -> None:
    down = with_settings(kit, settings_for(tmp_path, smtp, receiver, smtp_port=free_port()))

    error = await failure_of("email", {"to": ["oncall@example.com"]}, opened_event(), down)

    assert error.retryable
    assert error.message.startswith("email: sending failed: ")


async def test_an_unknown_channel_is_not_retryable(kit: DeliveryKit) -> None:
    assert "pigeon" not in REGISTRY

    error = await failure_of("pigeon", {}, opened_event(), kit)

    assert not error.retryable


def test_the_api_the_plans_and_the_registry_name_the_same_channels() -> None:
    assert set(get_args(ChannelName)) == set(REGISTRY) == set(plan_channels()["pro"])


def test_each_provider_type_in_the_api_takes_the_config_its_channel_declares() -> None:
    declared = {
        get_args(model.model_fields["type"].annotation)[0]: model.model_fields["config"].annotation
        for model in get_args(NewProvider)
    }

    assert declared == {name: channel.config_model for name, channel in REGISTRY.items()}
