"""The nine channel types: the config each needs, which parts are secret, how they are shown.

Contract §9 fixes the config fields. Secrets are masked in every response; a masked value sent
back in an update keeps the stored secret, so a client can edit a provider it read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from yarl import URL

from upwatch.accounts.schemas import Email
from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input
from upwatch.notifications.transports import RESERVED_HEADERS

Channel = Literal[
    "email", "sms", "slack", "webhook", "discord", "teams", "telegram", "whatsapp", "pagerduty"
]

HookUrl = Annotated[
    str, Field(min_length=1, max_length=2048, pattern=r"^https?://[^\u0000-\u0020\u007f-\u009f]+$")
]
Secret = Annotated[str, Field(min_length=1, max_length=256, pattern=SINGLE_LINE_PATTERN)]
HeaderName = Annotated[
    str, Field(min_length=1, max_length=100, pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
]
HeaderValue = Annotated[str, Field(max_length=1000, pattern=SINGLE_LINE_PATTERN)]
Phone = Annotated[
    str, Field(pattern=r"^\+[1-9][0-9]{6,14}$", description="E.164, e.g. +14155550100")
]


class EmailConfig(Input):
    # The accounts' address rule: syntax only, internal domains (.test, .internal) allowed.
    to: Annotated[list[Email], Field(min_length=1, max_length=20)]


class ChatHookConfig(Input):
    webhookUrl: HookUrl


class WebhookConfig(Input):
    url: HookUrl
    headers: Annotated[dict[HeaderName, HeaderValue], Field(max_length=20)] | None = None
    secret: Secret | None = Field(
        default=None,
        description="With a secret, each delivery carries `X-Upwatch-Signature: "
        "sha256=<hex HMAC-SHA256 of the body>`.",
    )

    @field_validator("headers")
    @classmethod
    def _not_reserved(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        """Refused here rather than dropped silently when sending."""
        for name in headers or {}:
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"{name} is set by Upwatch itself")
        return headers


class TelegramConfig(Input):
    botToken: Annotated[str, Field(pattern=r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$")]
    chatId: Annotated[str, Field(pattern=r"^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$")]


class PagerDutyConfig(Input):
    routingKey: Annotated[
        str,
        Field(pattern=r"^[A-Za-z0-9]{20,64}$", description="Events API v2 integration key"),
    ]


class TwilioConfig(Input):
    to: Phone
    from_: Phone = Field(alias="from")
    accountSid: Annotated[str, Field(pattern=r"^AC[0-9a-fA-F]{32}$")]
    authToken: Annotated[str, Field(pattern=r"^[A-Za-z0-9]{16,64}$")]


CONFIG_MODELS: dict[str, type[Input]] = {
    "email": EmailConfig,
    "slack": ChatHookConfig,
    "discord": ChatHookConfig,
    "teams": ChatHookConfig,
    "webhook": WebhookConfig,
    "telegram": TelegramConfig,
    "pagerduty": PagerDutyConfig,
    "sms": TwilioConfig,
    "whatsapp": TwilioConfig,
}

# Fields shown masked. Webhook URLs often carry their credential in the path or query.
SECRET_FIELDS: dict[str, tuple[str, ...]] = {
    "slack": ("webhookUrl",),
    "discord": ("webhookUrl",),
    "teams": ("webhookUrl",),
    "webhook": ("url", "secret"),
    "telegram": ("botToken",),
    "pagerduty": ("routingKey",),
    "sms": ("authToken",),
    "whatsapp": ("authToken",),
}
MASK = "****"
# Where messages go. A stored secret is only kept for the same destination: otherwise a member
# could point the provider at a server of their own and receive the secret with the next alert.
DESTINATION_FIELDS: dict[str, tuple[str, ...]] = {
    "webhook": ("url",),
    "telegram": ("chatId",),
    "sms": ("to", "accountSid"),
    "whatsapp": ("to", "accountSid"),
}


class SecretNotKept(ValueError):
    """A masked secret was sent back for a new destination."""

    def __init__(self, field: str) -> None:
        super().__init__(f"config.{field}")
        self.field = f"config.{field}"


def validate_config(channel: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The config as stored; raises ``ValidationError`` with the failing fields."""
    model = CONFIG_MODELS[channel].model_validate(dict(raw))
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def field_errors(exc: ValidationError) -> list[tuple[str, str]]:
    return [
        (".".join(["config", *(str(p) for p in error["loc"])]), error["msg"])
        for error in exc.errors()
    ]


def mask_value(value: str) -> str:
    """Enough to recognise a secret, not to use it."""
    if value.startswith(("http://", "https://")):
        try:
            url = URL(value)
            return f"{url.scheme}://{url.host}/{MASK}"
        except (ValueError, TypeError):
            return MASK
    return f"{MASK}{value[-4:]}" if len(value) >= 16 else MASK


def masked(channel: str, config: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(config)
    for name in SECRET_FIELDS.get(channel, ()):
        if isinstance(shown.get(name), str):
            shown[name] = mask_value(shown[name])
    if channel == "webhook" and isinstance(shown.get("headers"), dict):
        # Header values are often credentials (Authorization, API keys).
        shown["headers"] = {k: mask_value(str(v)) for k, v in shown["headers"].items()}
    return shown


def keep_secrets(
    channel: str, submitted: Mapping[str, Any], stored: Mapping[str, Any]
) -> dict[str, Any]:
    """An update's config where every secret sent back masked is the stored one again.

    Raises ``SecretNotKept`` when the destination changes and a masked secret is sent back:
    the new destination needs the secret given again.
    """
    merged = dict(submitted)
    restored: list[str] = []
    for name in SECRET_FIELDS.get(channel, ()):
        old = stored.get(name)
        if isinstance(old, str) and merged.get(name) == mask_value(old):
            merged[name] = old
            restored.append(name)
    if channel == "webhook":
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
    moved = any(merged.get(f) != stored.get(f) for f in DESTINATION_FIELDS.get(channel, ()))
    secrets = [r for r in restored if r not in DESTINATION_FIELDS.get(channel, ())]
    if moved and secrets:
        raise SecretNotKept(secrets[0])
    return merged


def urls_of(channel: str, config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, URL) pairs the service will contact, for the address policy."""
    name = {"slack": "webhookUrl", "discord": "webhookUrl", "teams": "webhookUrl"}.get(
        channel, "url" if channel == "webhook" else ""
    )
    value = config.get(name) if name else None
    return [(name, value)] if isinstance(value, str) else []
