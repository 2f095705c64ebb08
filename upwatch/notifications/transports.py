"""Alert transports: one small class per channel, each turning an ``AlertEvent`` into one message.

A failed delivery raises ``TransportError``, which says whether retrying can help: a timeout or
a 503 can pass, a revoked webhook or an invalid routing key cannot. Error messages are stored
and shown to users, so they are short and never carry a credential (bot tokens, auth tokens,
routing keys, signing secrets, or the path of a chat webhook URL, which is the credential).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any, ClassVar, Final
from urllib.parse import quote, unquote

import aiohttp
import aiosmtplib
from yarl import URL

from upwatch.config import Settings
from upwatch.kit.mail import PermanentMailError, SmtpTransport, one_line
from upwatch.kit.net import ResolutionFailed, TargetRefused
from upwatch.notifications.events import AlertEvent, EventKind, format_duration

MAX_RESPONSE_BYTES: Final = 64 * 1024
MAX_ERROR_CHARS: Final = 500
# Room left for the service's own words inside an error message.
MAX_DETAIL_CHARS: Final = 300

DELIVERY_HEADER: Final = "X-Upwatch-Delivery"
EVENT_HEADER: Final = "X-Upwatch-Event"
SIGNATURE_HEADER: Final = "X-Upwatch-Signature"
# Webhook headers a user may not set: they frame or authenticate the request. Transfer-Encoding
# is not in the documented list, but a user value would corrupt the framing of our body.
RESERVED_HEADERS: Final = frozenset(
    name.lower()
    for name in (
        "Content-Type",
        "Content-Length",
        "Host",
        "Transfer-Encoding",
        SIGNATURE_HEADER,
        DELIVERY_HEADER,
        EVENT_HEADER,
    )
)

TEST_NOTICE: Final = "This is a test message: the notification channel works."


class TransportError(Exception):
    """A delivery failed; ``retryable`` says whether trying again later can help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class DeliveryKit:
    settings: Settings
    http: aiohttp.ClientSession  # a guarded_session(...) created by the caller
    smtp: SmtpTransport


# --- Keeping secrets out of error messages -------------------------------------------------

# scheme://[userinfo@]host followed by the rest of the URL; only scheme and host survive.
_URL_PATTERN: Final = re.compile(r"""(https?://)(?:[^\s'"<>/?#@]*@)?([^\s'"<>/?#]+)[^\s'"<>]*""")


def _variants(secret: str) -> set[str]:
    """The forms a secret takes in text: raw, and as aiohttp/yarl may have encoded it."""
    forms = {secret, unquote(secret), quote(secret, safe=""), quote(secret), quote(secret, ":/")}
    # Shorter strings cannot be told from ordinary words, and are no credential anyway.
    return {form for form in forms if len(form) >= 3}


def url_secrets(url: str) -> list[str]:
    """The credential parts of a webhook URL: path, query and password."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return [url]
    parts = [parsed.raw_path, parsed.path, parsed.raw_query_string, parsed.query_string]
    parts.append(parsed.password or "")
    return [part for part in parts if part and part != "/"]


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without URL paths or any form of ``secrets``, capped for storage."""
    text = _URL_PATTERN.sub(lambda match: f"{match[1]}{match[2]}/…", text)
    forms = set().union(*(_variants(secret) for secret in secrets if secret))
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "[redacted]")
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return text


def _short(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- What an event says, shared by the rich formats ----------------------------------------


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def summary(event: AlertEvent) -> str:
    """One sentence under the headline: what happened."""
    if event.kind is EventKind.TEST:
        return TEST_NOTICE
    if event.kind is EventKind.RESOLVED:
        return "The monitor is passing its checks again."
    if event.failure is not None:
        return event.failure.describe()
    return "The monitor is failing its checks."


def facts(event: AlertEvent) -> list[tuple[str, str]]:
    """Name/value pairs for cards and fields; empty values are left out."""
    pairs: list[tuple[str, str | None]] = [
        ("Monitor", event.monitor_name),
        ("Target", event.monitor_target),
        ("Project", event.project_name),
    ]
    if event.kind is EventKind.OPENED and event.incident_id is not None:
        pairs.append(("Severity", event.severity))
    pairs.append(("Down since", _iso(event.since) if event.since else None))
    pairs.append(("Recovered at", _iso(event.resolved_at) if event.resolved_at else None))
    duration = event.duration_seconds
    pairs.append(("Outage length", None if duration is None else format_duration(duration)))
    return [(name, value) for name, value in pairs if value]


def short_text(event: AlertEvent, limit: int) -> str:
    """The headline and as many body lines as fit in ``limit`` characters (SMS, WhatsApp)."""
    text = event.headline[:limit]
    for line in event.lines():
        # A line that does not fit is skipped, not cut: a later one (the link) may still fit.
        if len(text) + 1 + len(line) <= limit:
            text = f"{text}\n{line}"
    return text


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# --- Base classes ------------------------------------------------------------------------


def _field(label: str, config: Mapping[str, Any], name: str) -> str:
    value = config.get(name)
    if not isinstance(value, str) or not value:
        raise TransportError(f"{label}: the channel has no {name}", retryable=False)
    return value


class Transport(ABC):
    label: ClassVar[str]  # how error messages name the channel

    def __init__(self, kit: DeliveryKit) -> None:
        self.kit = kit

    @abstractmethod
    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        """Deliver one message, or raise ``TransportError``."""

    def error(self, text: str, *, retryable: bool, secrets: Iterable[str] = ()) -> TransportError:
        return TransportError(scrub(f"{self.label}: {text}", secrets), retryable=retryable)


@dataclass(frozen=True)
class Reply:
    """An HTTP answer, its body capped at ``MAX_RESPONSE_BYTES``."""

    status: int
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def retryable_status(status: int) -> bool:
    return status in (408, 425, 429) or status >= 500


def service_error(body: bytes) -> str:
    """The service's own words about a failure, from the JSON error shapes of the services
    (Telegram ``description``, Twilio/Discord ``message`` and ``code``, PagerDuty ``errors``,
    Power Automate ``error.message``) or a plain-text body (Slack's ``no_service``)."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return _short(text)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        data = data["error"]
    if not isinstance(data, dict):
        return _short(text)
    words = [data[key] for key in ("description", "message") if isinstance(data.get(key), str)]
    errors = data.get("errors")
    if isinstance(errors, list):
        words.extend(str(item) for item in errors)
    code = data.get("code")
    if code is not None and not isinstance(code, dict | list):
        words.append(f"(code {code})")
    return _short(" ".join(words) if words else text)


def _network_failure(exc: BaseException, timeout: float) -> str:
    """What went wrong on the wire. aiohttp's own strings name the URL, so they are not used
    where they would; the scrubber catches the rest."""
    match exc:
        case aiohttp.ClientConnectorDNSError() | ResolutionFailed():
            return "DNS lookup failed"
        case aiohttp.ClientConnectorCertificateError():
            return "TLS certificate verification failed"
        case aiohttp.ClientSSLError():
            return "TLS handshake failed"
        case aiohttp.ClientConnectorError():
            if isinstance(exc.os_error, ConnectionRefusedError):
                return "connection refused"
            return f"cannot connect ({exc.os_error.strerror or type(exc.os_error).__name__})"
        case TimeoutError():
            return f"no answer within {timeout:g} s"
        case aiohttp.ServerDisconnectedError():
            return "the server closed the connection"
        case aiohttp.ClientResponseError():
            return f"{type(exc).__name__} (HTTP {exc.status})"
        case _:
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    body = bytearray()
    while len(body) < MAX_RESPONSE_BYTES:
        chunk = await response.content.read(MAX_RESPONSE_BYTES - len(body))
        if not chunk:
            break
        body += chunk
    return bytes(body)


class HttpTransport(Transport):
    async def post(
        self,
        url: str,
        event: AlertEvent,
        *,
        data: bytes | Mapping[str, str],
        secrets: Iterable[str],
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """POST once, without following redirects; a 2xx ``Reply`` or a ``TransportError``.

        ``data`` is the body as bytes, or form fields to be URL-encoded.
        """
        secrets = list(secrets)  # errors are raised "from None": aiohttp's carry the URL
        timeout = self.kit.settings.alert_timeout_seconds
        sent = {**(headers or {}), DELIVERY_HEADER: event.delivery_id}
        try:
            async with self.kit.http.post(
                url,
                data=data,
                headers=sent,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False,
            ) as response:
                status = response.status
                try:
                    body = await _read_capped(response)
                except (aiohttp.ClientError, OSError, TimeoutError):
                    if not 200 <= status < 300:
                        raise
                    # Accepted already; a retry would deliver the message twice.
                    body = b""
        except TargetRefused as exc:
            raise self.error(
                f"the address is refused ({exc})", retryable=False, secrets=secrets
            ) from None
        except aiohttp.InvalidURL:
            raise self.error("the URL is not valid", retryable=False, secrets=secrets) from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            text = _network_failure(exc, timeout)
            raise self.error(text, retryable=True, secrets=secrets) from None
        except ValueError as exc:
            # aiohttp refuses a header value with a line break before sending anything.
            text = f"the request cannot be sent ({exc})"
            raise self.error(text, retryable=False, secrets=secrets) from None
        reply = Reply(status, body)
        if 200 <= status < 300:
            return reply
        if 300 <= status < 400:
            raise self.error(
                f"HTTP {status}: redirect not followed", retryable=False, secrets=secrets
            )
        detail = service_error(body)
        text = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
        raise self.error(text, retryable=retryable_status(status), secrets=secrets)

    async def post_json(
        self, url: str, event: AlertEvent, value: Any, *, secrets: Iterable[str]
    ) -> Reply:
        headers = {"Content-Type": "application/json"}
        return await self.post(
            url, event, data=_json_bytes(value), headers=headers, secrets=secrets
        )


# --- The channels ------------------------------------------------------------------------


class EmailTransport(Transport):
    label = "email"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        settings = self.kit.settings
        if not settings.smtp_configured:
            raise TransportError("SMTP is not configured (UPWATCH_SMTP_HOST)", retryable=False)
        recipients = config.get("to")
        if not isinstance(recipients, list) or not recipients:
            raise self.error("the channel has no recipients", retryable=False)
        secrets = [settings.smtp_password]
        try:
            message = EmailMessage()
            message["From"] = settings.mail_from
            message["To"] = ", ".join(str(address) for address in recipients)
            message["Subject"] = one_line(event.headline)
            message["Date"] = formatdate(usegmt=True)
            message["Message-ID"] = f"<alert-{event.delivery_id}@upwatch>"
            # RFC 3834: out-of-office replies are not sent back to an automatic sender.
            message["Auto-Submitted"] = "auto-generated"
            message.set_content(event.text)
        except (ValueError, TypeError) as exc:
            raise self.error(
                f"cannot compose the message: {exc}", retryable=False, secrets=secrets
            ) from None
        try:
            await self.kit.smtp.send_email(message)
        except PermanentMailError as exc:
            raise self.error(
                f"the mail server refused the message: {exc}", retryable=False, secrets=secrets
            ) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            text = f"sending failed: {type(exc).__name__}: {exc}"
            raise self.error(text, retryable=True, secrets=secrets) from None


def _slack_escape(text: str) -> str:
    """Slack's three control characters in mrkdwn; nothing else may be entity-encoded."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackTransport(HttpTransport):
    label = "Slack"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        url = _field(self.label, config, "webhookUrl")
        await self.post_json(url, event, self.message(event), secrets=url_secrets(url))

    @staticmethod
    def message(event: AlertEvent) -> dict[str, Any]:
        lines = "\n".join(_slack_escape(line) for line in event.lines())
        blocks: list[dict[str, Any]] = [
            # Header text is plain_text (no escaping) and at most 150 characters.
            {"type": "header", "text": {"type": "plain_text", "text": event.headline[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": lines[:3000]}},
        ]
        if event.incident_url:
            # A "|" would end the URL part of Slack's <url|label> link syntax.
            target = _slack_escape(event.incident_url).replace("|", "%7C")
            link = {"type": "mrkdwn", "text": f"<{target}|Open the incident in Upwatch>"}
            blocks.append({"type": "context", "elements": [link]})
        # "text" is the notification fallback shown where blocks are not.
        return {"text": _slack_escape(event.headline), "blocks": blocks}


DISCORD_COLORS: Final = {
    EventKind.OPENED: 0xE01E5A,  # red
    EventKind.RESOLVED: 0x2EB67D,  # green
    EventKind.TEST: 0x3B82F6,  # blue
}
# Discord rejects an embed whose title, description and fields exceed 6000 characters together.
DISCORD_EMBED_CHARS: Final = 6000


class DiscordTransport(HttpTransport):
    label = "Discord"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        url = _field(self.label, config, "webhookUrl")
        await self.post_json(url, event, self.message(event), secrets=url_secrets(url))

    @staticmethod
    def message(event: AlertEvent) -> dict[str, Any]:
        title = event.headline[:256]
        description = summary(event)[:4096]
        budget = DISCORD_EMBED_CHARS - len(title) - len(description)
        fields: list[dict[str, Any]] = []
        for name, value in facts(event)[:25]:
            name, value = name[:256], value[:1024]
            if len(name) + len(value) > budget:
                break
            budget -= len(name) + len(value)
            fields.append({"name": name, "value": value, "inline": len(value) <= 40})
        embed: dict[str, Any] = {
            "title": title,
            "description": description,
            "color": DISCORD_COLORS[event.kind],
            "fields": fields,
            "timestamp": _iso(event.occurred_at),
        }
        if event.incident_url:
            embed["url"] = event.incident_url
        # No parsed mentions: a monitor named "@everyone" must not ping a whole server.
        return {"username": "Upwatch", "allowed_mentions": {"parse": []}, "embeds": [embed]}


TEAMS_COLORS: Final = {
    EventKind.OPENED: "Attention",
    EventKind.RESOLVED: "Good",
    EventKind.TEST: "Accent",
}


class TeamsTransport(HttpTransport):
    """Microsoft Teams through a Power Automate "Workflows" webhook (an Adaptive Card)."""

    label = "Microsoft Teams"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        url = _field(self.label, config, "webhookUrl")
        await self.post_json(url, event, self.message(event), secrets=url_secrets(url))

    @staticmethod
    def message(event: AlertEvent) -> dict[str, Any]:
        card: dict[str, Any] = {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": [
                {
                    "type": "TextBlock",
                    "text": event.headline,
                    "weight": "Bolder",
                    "size": "Medium",
                    "color": TEAMS_COLORS[event.kind],
                    "wrap": True,
                },
                {"type": "TextBlock", "text": summary(event), "wrap": True},
                {
                    "type": "FactSet",
                    "facts": [{"title": name, "value": value} for name, value in facts(event)],
                },
            ],
        }
        if event.incident_url:
            card["actions"] = [
                {"type": "Action.OpenUrl", "title": "Open incident", "url": event.incident_url}
            ]
        attachment = {
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": None,
            "content": card,
        }
        return {"type": "message", "attachments": [attachment]}


class WebhookTransport(HttpTransport):
    label = "webhook"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        url = _field(self.label, config, "url")
        secret = config.get("secret") or ""
        user_headers = config.get("headers") or {}
        # Serialized once: the signature covers exactly the bytes that are sent.
        body = _json_bytes(event.payload())
        headers = {
            str(name): str(value)
            for name, value in user_headers.items()
            if str(name).lower() not in RESERVED_HEADERS
        }
        # Header values often hold tokens (Authorization), so they are kept out of errors too.
        secrets = [secret, *url_secrets(url), *headers.values()]
        headers["Content-Type"] = "application/json"
        headers[EVENT_HEADER] = event.kind.value
        if secret:
            digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            headers[SIGNATURE_HEADER] = f"sha256={digest}"
        await self.post(url, event, data=body, headers=headers, secrets=secrets)


class TelegramTransport(HttpTransport):
    label = "Telegram"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        token = _field(self.label, config, "botToken")
        chat_id = _field(self.label, config, "chatId")
        # The token is a path segment: quoted, so that it cannot reach another API method.
        url = f"{self.kit.settings.telegram_api_url}/bot{quote(token, safe=':')}/sendMessage"
        # Plain text (no parse_mode): user text needs no escaping and cannot break the markup.
        message = {"chat_id": chat_id, "text": event.text[:4096], "disable_web_page_preview": True}
        reply = await self.post_json(url, event, message, secrets=[token])
        answer = reply.json()
        if isinstance(answer, dict) and answer.get("ok") is True:
            return
        if not isinstance(answer, dict):
            raise self.error(f"HTTP {reply.status}: not a Bot API answer", retryable=True)
        code = answer.get("error_code")
        retryable = isinstance(code, int) and (code == 429 or code >= 500)
        detail = service_error(reply.body)
        raise self.error(f"HTTP {reply.status}: {detail}", retryable=retryable, secrets=[token])


PAGERDUTY_SEVERITIES: Final = {
    "critical": "critical",
    "high": "error",
    "medium": "warning",
    "low": "info",
}


class PagerDutyTransport(HttpTransport):
    """PagerDuty Events API v2: an incident triggers an alert, its resolution resolves it."""

    label = "PagerDuty"

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        routing_key = _field(self.label, config, "routingKey")
        if event.kind is EventKind.TEST:
            dedup_key = f"upwatch-test-{event.delivery_id}"
            await self.enqueue(self.trigger(routing_key, dedup_key, event), event, routing_key)
            # Resolved at once so nobody stays paged. Should this fail, the retry triggers the
            # same dedup key again, which PagerDuty folds into the alert that is still open.
            await self.enqueue(self.resolve(routing_key, dedup_key), event, routing_key)
            return
        dedup_key = f"upwatch-{event.incident_id or event.delivery_id}"
        if event.kind is EventKind.RESOLVED:
            await self.enqueue(self.resolve(routing_key, dedup_key), event, routing_key)
        else:
            await self.enqueue(self.trigger(routing_key, dedup_key, event), event, routing_key)

    async def enqueue(self, message: dict[str, Any], event: AlertEvent, routing_key: str) -> None:
        url = f"{self.kit.settings.pagerduty_events_url}/v2/enqueue"
        await self.post_json(url, event, message, secrets=[routing_key])

    def trigger(self, routing_key: str, dedup_key: str, event: AlertEvent) -> dict[str, Any]:
        is_test = event.kind is EventKind.TEST
        opened = event.kind is EventKind.OPENED
        details: dict[str, Any] = {"What failed" if opened else "Summary": summary(event)}
        details.update(facts(event))
        if event.incident_url:
            details["Incident"] = event.incident_url
        payload: dict[str, Any] = {
            "summary": event.headline[:1024],
            "source": event.monitor_target or event.monitor_name or "upwatch",
            "severity": "info" if is_test else PAGERDUTY_SEVERITIES.get(event.severity, "error"),
            "timestamp": _iso(event.occurred_at),
            "group": event.project_name,
            "custom_details": details,
        }
        if event.monitor_name:
            payload["component"] = event.monitor_name
        if event.failure is not None and event.failure.kind:
            payload["class"] = event.failure.kind
        message: dict[str, Any] = {
            "routing_key": routing_key,
            "event_action": "trigger",
            "dedup_key": dedup_key,
            "payload": payload,
            "client": "Upwatch",
            "client_url": self.kit.settings.public_url,
        }
        if event.incident_url:
            message["links"] = [{"href": event.incident_url, "text": "Upwatch incident"}]
        return message

    @staticmethod
    def resolve(routing_key: str, dedup_key: str) -> dict[str, Any]:
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup_key}


class TwilioTransport(HttpTransport):
    """A message through Twilio's Messages API; subclasses pick the channel by number prefix."""

    prefix: ClassVar[str] = ""
    MAX_BODY_CHARS: ClassVar[int] = 1600  # Twilio's limit for one message

    async def send(self, config: Mapping[str, Any], event: AlertEvent) -> None:
        account_sid = _field(self.label, config, "accountSid")
        auth_token = _field(self.label, config, "authToken")
        to = _field(self.label, config, "to")
        sender = _field(self.label, config, "from")
        base = self.kit.settings.twilio_api_url
        url = f"{base}/2010-04-01/Accounts/{quote(account_sid, safe='')}/Messages.json"
        form = {
            "To": self.address(to),
            "From": self.address(sender),
            "Body": short_text(event, self.MAX_BODY_CHARS),
        }
        # Built by hand: aiohttp.BasicAuth is deprecated, its replacement is new in 3.14.
        credentials = base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()
        headers = {"Authorization": f"Basic {credentials}"}
        await self.post(url, event, data=form, headers=headers, secrets=[auth_token])

    def address(self, number: str) -> str:
        return number if number.startswith(self.prefix) else f"{self.prefix}{number}"


class SmsTransport(TwilioTransport):
    label = "SMS (Twilio)"


class WhatsAppTransport(TwilioTransport):
    label = "WhatsApp (Twilio)"
    prefix = "whatsapp:"


TRANSPORTS: Final[dict[str, type[Transport]]] = {
    "email": EmailTransport,
    "sms": SmsTransport,
    "slack": SlackTransport,
    "webhook": WebhookTransport,
    "discord": DiscordTransport,
    "teams": TeamsTransport,
    "telegram": TelegramTransport,
    "whatsapp": WhatsAppTransport,
    "pagerduty": PagerDutyTransport,
}


async def deliver(
    channel: str, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit
) -> None:
    """Send ``event`` through ``channel``; raises ``TransportError`` when it was not delivered."""
    transport = TRANSPORTS.get(channel)
    if transport is None:
        raise TransportError(f"unknown channel {channel!r}", retryable=False)
    await transport(kit).send(config, event)
