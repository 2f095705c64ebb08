"""What every channel shares: the ``Channel`` base, failures, secrets, and HTTP posting.

A channel is one module that says everything about one way of alerting: its name and label, its
config model and which fields are secret, which URLs the address guard checks, whether it can
be a member's personal channel, the plan that offers it, its console form, and how it sends.
The module ends with ``CHANNEL = ...``; the registry (``registry.py``) finds it there, and every
list of channels (API enums and unions, plans, personal settings, console forms) is derived
from the registry.

A failed delivery raises ``TransportError``, which says whether retrying can help: a timeout or
a 503 can pass, a revoked webhook or an invalid routing key cannot; and, when a 429 or 503
said so (``Retry-After``), how long the service asked to be left alone. Error messages are stored
and shown to users, so they are short and never carry a credential (bot tokens, auth tokens,
routing keys, signing secrets, or the path of a chat webhook URL, which is the credential).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final
from urllib.parse import quote, unquote

import aiohttp
from pydantic import Field
from yarl import URL

from upwatch.config import Settings
from upwatch.kit.clock import Clock
from upwatch.kit.inputs import HTTP_URL_PATTERN, Input
from upwatch.kit.net import ResolutionFailed, TargetRefused, retry_after_seconds
from upwatch.kit.security import SECRET_MASK
from upwatch.mail.sender import SmtpTransport, one_line
from upwatch.notifications.events import AlertEvent

MAX_RESPONSE_BYTES: Final = 64 * 1024
MAX_ERROR_CHARS: Final = 500
# Room left for the service's own words inside an error message.
MAX_DETAIL_CHARS: Final = 300

DELIVERY_HEADER: Final = "X-Upwatch-Delivery"
MASK: Final = SECRET_MASK

HookUrl = Annotated[str, Field(min_length=1, max_length=2048, pattern=HTTP_URL_PATTERN)]


class TransportError(Exception):
    """A delivery failed; ``retryable`` says whether trying again later can help, and
    ``retry_after`` how many seconds the service asked to wait first (``Retry-After``)."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class DeliveryKit:
    settings: Settings
    http: aiohttp.ClientSession  # a guarded_session(...) created by the caller
    smtp: SmtpTransport
    # Signed webhook timestamps and HTTP-date ``Retry-After`` answers are read against it.
    clock: Clock = field(default_factory=Clock)


class SecretNotKept(ValueError):
    """A masked secret was sent back for a new destination."""

    def __init__(self, field: str) -> None:
        super().__init__(f"config.{field}")
        self.name = field  # within the config
        self.field = f"config.{field}"


# --- Keeping secrets out of responses and error messages ----------------------------------


def mask_value(value: str) -> str:
    """Enough to recognise a secret, not to use it. A URL keeps its scheme, host and port (where
    it goes); its user, password, path, query and fragment (where credentials sit) are masked."""
    if value.startswith(("http://", "https://")):
        try:
            url = URL(value)
            host = url.host or ""
            if ":" in host:
                host = f"[{host}]"  # an IPv6 address
            port = f":{url.explicit_port}" if url.explicit_port is not None else ""
            return f"{url.scheme}://{host}{port}/{MASK}"
        except (ValueError, TypeError):
            return MASK
    return f"{MASK}{value[-4:]}" if len(value) >= 16 else MASK


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


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# --- The base of every channel ------------------------------------------------------------


@dataclass(frozen=True)
class FormField:
    """A config field as the console's form asks for it. ``name`` is the API's (the form sends
    it as ``config.<name>``), so the API's errors land next to the right field."""

    name: str
    label: str
    kind: str = "text"  # the <input> type
    optional: bool = False  # left out of the config when blank
    listed: bool = False  # a comma-separated list


@dataclass(frozen=True)
class Personal:
    """How a channel serves as a member's personal channel (a switch and a ``<name>Config`` in
    their settings record)."""

    views: frozenset[str]  # the settings views that show it: "profile", "settings"
    on_by_default: bool = False
    # Left empty, it sends to the account's own address (the console's form says so).
    own_address: bool = False


@dataclass(frozen=True)
class Places:
    """Where the API lists the channel. The contract's lists keep orders of their own, so each
    list has its own position: the API document and the served lists stay as they were."""

    names: int  # ChannelName, the registry, and a plan with every channel
    forms: int  # the provider-create union and the console's choice of channel
    free_plan: int | None = None  # in the free plan's list
    personal: int | None = None  # in the settings record


class Channel(ABC):
    """One notification channel, declared in one place."""

    name: ClassVar[str]  # the provider type, also the name in a plan's notificationChannels
    label: ClassVar[str]  # how error messages name the channel
    places: ClassVar[Places]
    # The cheapest built-in plan that offers it ("free" or "pro"); dearer plans offer it too.
    plan: ClassVar[str]
    personal: ClassVar[Personal | None] = None
    form: ClassVar[tuple[FormField, ...]]
    config_model: ClassVar[type[Input]]
    # Shown masked in every response; a masked value sent back keeps the stored one.
    secret_fields: ClassVar[tuple[str, ...]] = ()
    # Where messages go. A stored secret is only kept for the same destination: otherwise a
    # member could point the provider at a server of their own and receive the secret with the
    # next alert.
    destination_fields: ClassVar[tuple[str, ...]] = ()
    # URLs the service will contact, refused when saved if the address guard refuses them.
    url_fields: ClassVar[tuple[str, ...]] = ()

    @property
    def title(self) -> str:
        """How the console names the channel: its label, unless the channel says otherwise."""
        return self.label

    @abstractmethod
    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        """Deliver one message, or raise ``TransportError``."""

    def error(
        self,
        text: str,
        *,
        retryable: bool,
        secrets: Iterable[str] = (),
        retry_after: float | None = None,
    ) -> TransportError:
        return TransportError(
            scrub(f"{self.label}: {text}", secrets), retryable=retryable, retry_after=retry_after
        )

    def required(self, config: Mapping[str, Any], name: str) -> str:
        """A config field the sending needs; its absence cannot be fixed by retrying."""
        value = config.get(name)
        if not isinstance(value, str) or not value:
            raise TransportError(f"{self.label}: the channel has no {name}", retryable=False)
        return value

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The config as stored; raises ``ValidationError`` with the failing fields."""
        model = self.config_model.model_validate(dict(raw))
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)

    def masked(self, config: Mapping[str, Any]) -> dict[str, Any]:
        shown = dict(config)
        for name in self.secret_fields:
            if isinstance(shown.get(name), str):
                shown[name] = mask_value(shown[name])
        return shown

    def restore_secrets(self, merged: dict[str, Any], stored: Mapping[str, Any]) -> list[str]:
        """Put back in ``merged`` each secret sent back masked; the fields restored."""
        restored: list[str] = []
        for name in self.secret_fields:
            old = stored.get(name)
            if isinstance(old, str) and merged.get(name) == mask_value(old):
                merged[name] = old
                restored.append(name)
        return restored

    def keep_secrets(
        self, submitted: Mapping[str, Any], stored: Mapping[str, Any]
    ) -> dict[str, Any]:
        """An update's config where every secret sent back masked is the stored one again.

        Raises ``SecretNotKept`` when the destination changes and a masked secret is sent
        back: the new destination needs the secret given again.
        """
        merged = dict(submitted)
        restored = self.restore_secrets(merged, stored)
        moved = any(merged.get(f) != stored.get(f) for f in self.destination_fields)
        secrets = [r for r in restored if r not in self.destination_fields]
        if moved and secrets:
            raise SecretNotKept(secrets[0])
        return merged

    def is_secret_path(self, path: str) -> bool:
        """Whether ``path`` in a provider (``config.<field>``) names one of its secrets."""
        return path.removeprefix("config.") in self.secret_fields and path.startswith("config.")

    def urls(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(field, URL) pairs the service will contact, for the address policy."""
        return [
            (name, value) for name in self.url_fields if isinstance(value := config.get(name), str)
        ]

    def for_account(self, config: Mapping[str, Any], account_email: str) -> dict[str, Any]:
        """The provider config a member's personal config stands for."""
        return dict(config)

    def kept_for_account(
        self, config: dict[str, Any], submitted: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What to store of a personal config the channel's rules accepted as ``config``."""
        return config


# --- Channels that POST over HTTP ---------------------------------------------------------


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


# Answers whose Retry-After says when to try again (RFC 9110 §10.2.3); on a redirect it means
# something else, and other errors do not send it.
RETRY_AFTER_STATUSES: Final = frozenset({429, 503})


def service_error(body: bytes) -> str:
    """The service's own words about a failure, from the JSON error shapes of the services
    (Telegram ``description``, Twilio/Discord ``message`` and ``code``, PagerDuty ``errors``,
    Power Automate ``error.message``, ntfy/Gotify/Matrix ``error``, Gotify
    ``errorDescription``, Matrix ``errcode``) or a plain-text body (Slack's ``no_service``)."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return _short(text)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        data = data["error"]
    if not isinstance(data, dict):
        return _short(text)
    keys = ("description", "message", "error", "errorDescription")
    words = [data[key] for key in keys if isinstance(data.get(key), str)]
    errors = data.get("errors")
    if isinstance(errors, list):
        words.extend(str(item) for item in errors)
    code = data.get("code", data.get("errcode"))
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


async def post_once(
    http: aiohttp.ClientSession,
    url: str,
    *,
    data: bytes | Mapping[str, str],
    headers: Mapping[str, str],
    seconds: float,
    clock: Clock,
    label: str,
    secrets: Iterable[str] = (),
    method: str = "POST",
) -> Reply:
    """POST (or ``method``) once through ``http`` (a guarded session), without following
    redirects, waiting at most ``seconds``: a 2xx ``Reply``, or a ``TransportError`` whose
    text starts with ``label`` and holds none of ``secrets`` (aiohttp's own errors carry
    the URL, so they are raised "from None"). Network failures, 408, 425, 429 and 5xx are
    retryable; a 429 or 503 says how long it asked to wait (``Retry-After``).

    ``data`` is the body as bytes, or form fields to be URL-encoded."""
    secrets = list(secrets)

    def failed(text: str, retryable: bool, retry_after: float | None = None) -> TransportError:
        return TransportError(
            scrub(f"{label}: {text}", secrets), retryable=retryable, retry_after=retry_after
        )

    try:
        async with http.request(
            method,
            url,
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=seconds),
            allow_redirects=False,
        ) as response:
            status = response.status
            retry_after = (
                retry_after_seconds(response.headers.get("Retry-After"), clock.now())
                if status in RETRY_AFTER_STATUSES
                else None
            )
            try:
                body = await _read_capped(response)
            except (aiohttp.ClientError, OSError, TimeoutError):
                if not 200 <= status < 300:
                    raise
                # Accepted already; a retry would deliver the message twice.
                body = b""
    except TargetRefused as exc:
        raise failed(f"the address is refused ({exc})", retryable=False) from None
    except aiohttp.InvalidURL:
        raise failed("the URL is not valid", retryable=False) from None
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise failed(_network_failure(exc, seconds), retryable=True) from None
    except ValueError as exc:
        # aiohttp refuses a header value with a line break before sending anything.
        raise failed(f"the request cannot be sent ({exc})", retryable=False) from None
    reply = Reply(status, body)
    if 200 <= status < 300:
        return reply
    if 300 <= status < 400:
        raise failed(f"HTTP {status}: redirect not followed", retryable=False)
    detail = service_error(body)
    text = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    raise failed(text, retryable=retryable_status(status), retry_after=retry_after)


class HttpChannel(Channel):
    async def post(
        self,
        kit: DeliveryKit,
        url: str,
        event: AlertEvent,
        *,
        data: bytes | Mapping[str, str],
        secrets: Iterable[str],
        headers: Mapping[str, str] | None = None,
        method: str = "POST",
    ) -> Reply:
        """One request of this channel (``post_once``), carrying the delivery's id."""
        return await post_once(
            kit.http,
            url,
            data=data,
            headers={**(headers or {}), DELIVERY_HEADER: event.delivery_id},
            seconds=kit.settings.alert_timeout_seconds,
            clock=kit.clock,
            label=self.label,
            secrets=secrets,
            method=method,
        )

    async def post_json(
        self,
        kit: DeliveryKit,
        url: str,
        event: AlertEvent,
        value: Any,
        *,
        secrets: Iterable[str],
        headers: Mapping[str, str] | None = None,
        method: str = "POST",
    ) -> Reply:
        sent = {**(headers or {}), "Content-Type": "application/json"}
        return await self.post(
            kit, url, event, data=json_bytes(value), headers=sent, secrets=secrets, method=method
        )
