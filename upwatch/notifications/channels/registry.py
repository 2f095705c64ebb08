"""Which channel serves each provider type, and the lookups the rest of the package uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import ValidationError

from upwatch.kit.errors import field_errors as worded_errors
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.notifications.channels.base import Channel, DeliveryKit, TransportError
from upwatch.notifications.channels.discord import Discord
from upwatch.notifications.channels.email import Email
from upwatch.notifications.channels.pagerduty import PagerDuty
from upwatch.notifications.channels.slack import Slack
from upwatch.notifications.channels.teams import Teams
from upwatch.notifications.channels.telegram import Telegram
from upwatch.notifications.channels.twilio import Sms, WhatsApp
from upwatch.notifications.channels.webhook import Webhook
from upwatch.notifications.events import AlertEvent

REGISTRY: Final[Mapping[str, Channel]] = {
    channel.name: channel
    for channel in (
        Email(),
        Sms(),
        Slack(),
        Webhook(),
        Discord(),
        Teams(),
        Telegram(),
        WhatsApp(),
        PagerDuty(),
    )
}

# The registry's names as a type, for the API schemas (a test keeps the two equal).
ChannelName = Literal[
    "email", "sms", "slack", "webhook", "discord", "teams", "telegram", "whatsapp", "pagerduty"
]


async def deliver(
    channel: str, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit
) -> None:
    """Send ``event`` through ``channel``; raises ``TransportError`` when it was not delivered."""
    found = REGISTRY.get(channel)
    if found is None:
        raise TransportError(f"unknown channel {channel!r}", retryable=False)
    await found.send(config, event, kit)


def validate_config(channel: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The config as stored; raises ``ValidationError`` with the failing fields."""
    return REGISTRY[channel].validate(raw)


def field_errors(exc: ValidationError, prefix: str = "config") -> list[tuple[str, str]]:
    """(field, message) pairs in the API's words, the field named under ``prefix`` (where the
    client sent the config: a provider's ``config``, a personal ``slackConfig``)."""
    return [(e.field, e.message) for e in worded_errors(exc.errors(), within=(prefix,))]


def masked(channel: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return REGISTRY[channel].masked(config)


def keep_secrets(
    channel: str, submitted: Mapping[str, Any], stored: Mapping[str, Any]
) -> dict[str, Any]:
    """See ``Channel.keep_secrets``."""
    return REGISTRY[channel].keep_secrets(submitted, stored)


def is_secret_path(channel: str, path: str) -> bool:
    """See ``Channel.is_secret_path``."""
    return REGISTRY[channel].is_secret_path(path)


def urls_of(channel: str, config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, URL) pairs the service will contact, for the address policy."""
    return REGISTRY[channel].urls(config)


def refused_urls(
    guard: NetworkGuard, channel: str, config: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(field, why) for each URL of ``config`` the address guard refuses now; they are checked
    again when sending."""
    refused = []
    for field, url in urls_of(channel, config):
        try:
            guard.check_url(url)
        except TargetRefused as exc:
            refused.append((field, f"refused address: {exc}"))
        except ValueError as exc:
            refused.append((field, str(exc)))
    return refused
