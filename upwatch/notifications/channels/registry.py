"""The registry: every channel module of this package, found by its ``CHANNEL``, and the lists
derived from it. No channel is named here; adding one is adding its module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import ValidationError

from upwatch.kit.errors import field_errors as worded_errors
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.notifications.channels.base import Channel, DeliveryKit, TransportError
from upwatch.notifications.events import AlertEvent


def _discovered() -> list[Channel]:
    """The ``CHANNEL`` of each module of the package (shared modules declare none)."""
    found = []
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        imported = importlib.import_module(f"{__package__}.{module.name}")
        channel = getattr(imported, "CHANNEL", None)
        if isinstance(channel, Channel):
            found.append(channel)
    return found


REGISTRY: Final[Mapping[str, Channel]] = {
    channel.name: channel
    for channel in sorted(_discovered(), key=lambda channel: channel.places.names)
}
# The order in which the API offers a form per channel (the provider-create union).
IN_FORM_ORDER: Final = tuple(sorted(REGISTRY.values(), key=lambda channel: channel.places.forms))

if TYPE_CHECKING:
    ChannelName = str
else:
    # The registry's names as a type, for the API schemas.
    ChannelName = Literal[tuple(REGISTRY)]


def plan_channels() -> dict[str, tuple[str, ...]]:
    """Each built-in plan's channels: the free plan those tagged free, in its own order; the
    pro plan every channel."""
    free = [channel for channel in REGISTRY.values() if channel.plan == "free"]
    free.sort(key=lambda channel: channel.places.free_plan or 0)
    return {"free": tuple(channel.name for channel in free), "pro": tuple(REGISTRY)}


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
