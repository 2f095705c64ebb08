"""The one stored settings record and its two views (profile settings and user settings).

The notification switches and ``*Config`` objects are the user's personal channels; their
rules (which channels there are, their defaults, when one is active, how a config is checked
and shown) are in ``notifications/personal.py``.
"""

from __future__ import annotations

from typing import Any

from upwatch.accounts.schemas import ChannelStatusOut, ProfileSettingsOut, UserSettingsOut
from upwatch.kit.net import NetworkGuard
from upwatch.notifications import personal

ACCOUNT_DEFAULTS: dict[str, Any] = {"language": "en", "timezone": "UTC", "theme": "light"}


def complete(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The stored record with defaults filled in for anything never set."""
    return personal.complete(stored, ACCOUNT_DEFAULTS)


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


def checked(
    stored: dict[str, Any] | None,
    changes: dict[str, Any],
    account_email: str,
    guard: NetworkGuard,
    prefix: str = "",
) -> dict[str, Any]:
    """``changes`` with each ``*Config`` checked and made storable
    (``personal.stored_config``); ``prefix`` is where the client sent the settings."""
    record = complete(stored)
    result = dict(changes)
    for key, value in changes.items():
        channel = personal.channel_of(key)
        if channel is not None and value is not None:
            result[key] = personal.stored_config(
                channel, value, record.get(key), account_email, guard, f"{prefix}{key}"
            )
    return result


def _published(
    stored: dict[str, Any] | None, account_email: str, channels: tuple[str, ...]
) -> dict[str, Any]:
    """The completed record as a view shows it: secrets masked, each channel's status."""
    record = complete(stored)
    published = dict(record)
    status = {}
    for channel in channels:
        key = personal.config_key(channel)
        published[key] = personal.shown(channel, record[key])
        reasons = personal.inactive_reasons(record, channel, account_email)
        status[channel] = ChannelStatusOut(active=not reasons, reason="; ".join(reasons) or None)
    published["channelStatus"] = status
    return published


def profile_view(stored: dict[str, Any] | None, account_email: str) -> ProfileSettingsOut:
    return ProfileSettingsOut.model_validate(
        _published(stored, account_email, personal.PROFILE_CHANNELS)
    )


def settings_view(stored: dict[str, Any] | None, account_email: str) -> UserSettingsOut:
    return UserSettingsOut.model_validate(
        _published(stored, account_email, personal.SETTINGS_CHANNELS)
    )
