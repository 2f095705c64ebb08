"""Notification channels: one module per channel, each declaring its config, its secrets, the
URLs the address guard checks, and how it sends (see ``base.Channel``); ``registry.py`` maps
provider types to channels. Contract §9 fixes the config fields.

Secrets are masked in every response; a masked value sent back in an update keeps the stored
secret, so a client can edit a provider it read.
"""

from upwatch.notifications.channels.base import (
    Channel,
    DeliveryKit,
    SecretNotKept,
    TransportError,
    mask_value,
)
from upwatch.notifications.channels.chat import ChatHookConfig
from upwatch.notifications.channels.email import EmailConfig
from upwatch.notifications.channels.pagerduty import PagerDutyConfig
from upwatch.notifications.channels.registry import (
    REGISTRY,
    ChannelName,
    deliver,
    field_errors,
    is_secret_path,
    keep_secrets,
    masked,
    refused_urls,
    urls_of,
    validate_config,
)
from upwatch.notifications.channels.telegram import TelegramConfig
from upwatch.notifications.channels.twilio import TwilioConfig
from upwatch.notifications.channels.webhook import WebhookConfig

__all__ = [
    "REGISTRY",
    "Channel",
    "ChannelName",
    "ChatHookConfig",
    "DeliveryKit",
    "EmailConfig",
    "PagerDutyConfig",
    "SecretNotKept",
    "TelegramConfig",
    "TransportError",
    "TwilioConfig",
    "WebhookConfig",
    "deliver",
    "field_errors",
    "is_secret_path",
    "keep_secrets",
    "mask_value",
    "masked",
    "refused_urls",
    "urls_of",
    "validate_config",
]
