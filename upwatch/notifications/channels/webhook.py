"""A webhook of the user's own: the event's JSON payload, signed when a secret is set.

Signed per the Standard Webhooks specification (``kit/webhooks.py``: ``webhook-id`` is the
alert's delivery id, the same on every retry; ``webhook-timestamp`` is each attempt's time),
and with the older ``X-Upwatch-Signature`` (a hex HMAC of the body alone, keyed with the
secret's UTF-8 bytes) that the contract names, so receivers written for it keep working.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import Field, field_validator

from upwatch.kit import webhooks
from upwatch.kit.inputs import HEADER_NAME_PATTERN, SINGLE_LINE_PATTERN, Input
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DELIVERY_HEADER,
    DeliveryKit,
    FormField,
    HookUrl,
    HttpChannel,
    Personal,
    Places,
    json_bytes,
    mask_value,
    url_secrets,
)
from upwatch.notifications.events import AlertEvent

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
        *webhooks.HEADERS,
    )
)

Secret = Annotated[str, Field(min_length=1, max_length=256, pattern=SINGLE_LINE_PATTERN)]
HeaderName = Annotated[str, Field(min_length=1, max_length=100, pattern=HEADER_NAME_PATTERN)]
HeaderValue = Annotated[str, Field(max_length=1000, pattern=SINGLE_LINE_PATTERN)]


def _names_by_pattern(schema: dict[str, Any]) -> None:
    """Publish the header-name rule as `propertyNames`: as `patternProperties` (pydantic's
    way) a name that misses the pattern would be schema-valid, yet the server refuses it."""
    patterns = schema.pop("patternProperties", None)
    if patterns:
        [(pattern, value_schema)] = patterns.items()
        schema["propertyNames"] = {"pattern": pattern, "minLength": 1, "maxLength": 100}
        schema["additionalProperties"] = value_schema


class WebhookConfig(Input):
    url: HookUrl
    headers: (
        Annotated[
            dict[HeaderName, HeaderValue],
            Field(max_length=20, json_schema_extra=_names_by_pattern),
        ]
        | None
    ) = None
    secret: Secret | None = Field(
        default=None,
        description="With a secret, each delivery is signed per the Standard Webhooks "
        "specification (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 "
        'HMAC-SHA256 of "{id}.{timestamp}.{body}">`) and carries `X-Upwatch-Signature: '
        "sha256=<hex HMAC-SHA256 of the body>`. A `whsec_<base64>` secret (24 to 64 bytes) "
        "signs with its decoded bytes, any other secret with its UTF-8 bytes.",
    )

    @field_validator("secret")
    @classmethod
    def _usable_secret(cls, secret: str | None) -> str | None:
        if secret is not None and (problem := webhooks.secret_problem(secret)) is not None:
            raise ValueError(problem)
        return secret

    @field_validator("headers")
    @classmethod
    def _not_reserved(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        """Refused here rather than dropped silently when sending."""
        for name in headers or {}:
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"{name} is set by Upwatch itself")
        return headers


def signature(secret: str, body: bytes) -> str:
    """The ``X-Upwatch-Signature`` value: the hex HMAC-SHA256 of exactly the bytes sent."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Webhook(HttpChannel):
    name = "webhook"
    label = "webhook"
    places = Places(names=3, forms=4, free_plan=1, personal=5)
    plan = "free"
    personal = Personal(views=frozenset({"profile", "settings"}))
    form = (
        FormField("url", N_("URL"), "url"),
        FormField("secret", N_("Signing secret"), "password", optional=True),
    )
    config_model = WebhookConfig
    # URLs often carry their credential in the path or query.
    secret_fields = ("url", "secret")
    destination_fields = ("url",)
    url_fields = ("url",)

    @property
    def title(self) -> str:
        return N_("Webhook")

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        url = self.required(config, "url")
        secret = config.get("secret") or ""
        user_headers = config.get("headers") or {}
        # Serialized once: the signature covers exactly the bytes that are sent.
        body = json_bytes(event.payload())
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
            # The delivery id is the alert's, kept across retries: receivers dedupe on it.
            now = kit.clock.now()
            headers.update(webhooks.signed_headers(secret, event.delivery_id, now, body))
            headers[SIGNATURE_HEADER] = signature(secret, body)
        await self.post(kit, url, event, data=body, headers=headers, secrets=secrets)

    def is_secret_path(self, path: str) -> bool:
        # Header values are masked like secrets, so a file may give them by reference too.
        return super().is_secret_path(path) or path.startswith("config.headers.")

    def masked(self, config: Mapping[str, Any]) -> dict[str, Any]:
        # Header values are often credentials (Authorization, API keys): masked like secrets.
        shown = super().masked(config)
        if isinstance(shown.get("headers"), dict):
            shown["headers"] = {k: mask_value(str(v)) for k, v in shown["headers"].items()}
        return shown

    def restore_secrets(self, merged: dict[str, Any], stored: Mapping[str, Any]) -> list[str]:
        restored = super().restore_secrets(merged, stored)
        new_headers, old_headers = merged.get("headers"), stored.get("headers")
        if isinstance(new_headers, dict) and isinstance(old_headers, dict):
            headers = {}
            for key, value in new_headers.items():
                if key in old_headers and value == mask_value(str(old_headers[key])):
                    headers[key] = old_headers[key]
                    restored.append(f"headers.{key}")
                else:
                    headers[key] = value
            merged["headers"] = headers
        return restored


CHANNEL = Webhook()
