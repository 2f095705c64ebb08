"""Which channel serves each provider type, and the lookups the rest of the package uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

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


def masked(channel: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return REGISTRY[channel].masked(config)


def keep_secrets(
    channel: str, submitted: Mapping[str, Any], stored: Mapping[str, Any]
) -> dict[str, Any]:
    """See ``Channel.keep_secrets``."""
    return REGISTRY[channel].keep_secrets(submitted, stored)


def urls_of(channel: str, config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, URL) pairs the service will contact, for the address policy."""
    return REGISTRY[channel].urls(config)
