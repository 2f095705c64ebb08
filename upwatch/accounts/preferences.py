"""The one stored settings record and its two views (profile settings and user settings)."""

from __future__ import annotations

import copy
from typing import Any

from upwatch.accounts.schemas import ProfileSettingsOut, UserSettingsOut

SWITCHES = ("email", "sms", "slack", "discord", "teams", "webhook")
CONFIGS = (
    "emailConfig",
    "smsConfig",
    "slackConfig",
    "discordConfig",
    "teamsConfig",
    "webhookConfig",
)

DEFAULTS: dict[str, Any] = {
    "language": "en",
    "timezone": "UTC",
    "theme": "light",
    "notifications": {
        "email": True,
        "sms": False,
        "slack": False,
        "discord": False,
        "teams": False,
        "webhook": False,
    },
    "preferredNotification": "email",
    **{name: {} for name in CONFIGS},
}


def complete(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The stored record with defaults filled in for anything never set."""
    record = copy.deepcopy(DEFAULTS)
    for key, value in (stored or {}).items():
        if key == "notifications" and isinstance(value, dict):
            record["notifications"].update(value)
        elif key in record:
            record[key] = value
    return record


def merge(stored: dict[str, Any] | None, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply the fields a request gave; switches merge one by one, config objects replace."""
    record = complete(stored)
    for key, value in changes.items():
        if value is None:
            continue
        if key == "notifications":
            record["notifications"].update({k: v for k, v in value.items() if v is not None})
        else:
            record[key] = value
    return record


def profile_view(stored: dict[str, Any] | None) -> ProfileSettingsOut:
    return ProfileSettingsOut.model_validate(complete(stored))


def settings_view(stored: dict[str, Any] | None) -> UserSettingsOut:
    return UserSettingsOut.model_validate(complete(stored))
