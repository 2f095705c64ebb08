"""Notification channels: one module per channel, each declaring everything about it (see
``base.Channel``); ``registry.py`` finds them and derives every list of channels. Contract §9
fixes the config fields.

Secrets are masked in every response; a masked value sent back in an update keeps the stored
secret, so a client can edit a provider it read.
"""

from upwatch.notifications.channels.base import (
    Channel,
    DeliveryKit,
    FormField,
    Personal,
    SecretNotKept,
    TransportError,
    mask_value,
)
from upwatch.notifications.channels.registry import (
    IN_FORM_ORDER,
    REGISTRY,
    ChannelName,
    deliver,
    field_errors,
    is_secret_path,
    keep_secrets,
    masked,
    plan_channels,
    refused_urls,
    urls_of,
    validate_config,
)

__all__ = [
    "IN_FORM_ORDER",
    "REGISTRY",
    "Channel",
    "ChannelName",
    "DeliveryKit",
    "FormField",
    "Personal",
    "SecretNotKept",
    "TransportError",
    "deliver",
    "field_errors",
    "is_secret_path",
    "keep_secrets",
    "mask_value",
    "masked",
    "plan_channels",
    "refused_urls",
    "urls_of",
    "validate_config",
]
