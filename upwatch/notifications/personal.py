"""Personal channels: a member's own ways of hearing about incidents, from their settings.

The settings record (``accounts/preferences.py`` stores it and shows it) holds one switch and
one ``<name>Config`` object per channel that declares itself personal (``Channel.personal``).
A channel is *active* when its switch is on **and** its config is set (a non-empty object)
**and** that config passes the channel's own rules, the ones a notification provider of that
type passes (``channels/registry.py``). Every active channel of every member of a project gets
that project's incident alerts, through the alert outbox, the address guard and the transports
that serve providers; ``preferredNotification`` goes first.

A channel may read a personal config its own way (``Channel.for_account``): an e-mail config
set without addresses (``{"to": []}``) means the account's own address, read when sending.
``{}`` is unset, so the seed's default switch alone mails nobody.

The rules here are pure: they read a settings record completed by ``complete``. The defaults
and completion of the channel part of the record live here, with the rules, so that sending
needs nothing from the accounts package.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pydantic import ValidationError

from upwatch.kit.errors import FieldError, ValidationFailed
from upwatch.kit.net import NetworkGuard
from upwatch.notifications.channels import (
    REGISTRY,
    SecretNotKept,
    field_errors,
    keep_secrets,
    masked,
    refused_urls,
    validate_config,
)


def _in_record_order(view: str | None = None) -> tuple[str, ...]:
    """The personal channels (those of ``view``, if given) in the settings record's order."""
    personal = [
        channel
        for channel in REGISTRY.values()
        if channel.personal is not None and (view is None or view in channel.personal.views)
    ]
    personal.sort(key=lambda channel: channel.places.personal or 0)
    return tuple(channel.name for channel in personal)


# The channels the settings record has a switch and a config for.
CHANNELS: Final = _in_record_order()
# The personal channels each view of the settings shows (the seed's two notification objects).
PROFILE_CHANNELS: Final = _in_record_order("profile")
SETTINGS_CHANNELS: Final = _in_record_order("settings")


def config_key(channel: str) -> str:
    return f"{channel}Config"


def _on_by_default(channel: str) -> bool:
    declared = REGISTRY[channel].personal
    return declared is not None and declared.on_by_default


DEFAULTS: Final[Mapping[str, Any]] = {
    "notifications": {channel: _on_by_default(channel) for channel in CHANNELS},
    # The first channel that is on from the start.
    "preferredNotification": next(c for c in CHANNELS if _on_by_default(c)),
    **{config_key(channel): {} for channel in CHANNELS},
}


def complete(stored: Mapping[str, Any] | None, defaults: Mapping[str, Any] = {}) -> dict[str, Any]:
    """The stored record with defaults (the channels', then ``defaults``) filled in for
    anything never set."""
    record = copy.deepcopy({**defaults, **DEFAULTS})
    for key, value in (stored or {}).items():
        if key == "notifications" and isinstance(value, dict):
            record["notifications"].update(value)
        elif key in record:
            record[key] = value
    return record


def channel_of(key: str) -> str | None:
    """The channel whose config ``key`` holds (``slackConfig`` -> ``slack``), or None."""
    channel = key.removesuffix("Config")
    return channel if channel != key and channel in CHANNELS else None


def resolved(channel: str, config: Mapping[str, Any], account_email: str) -> dict[str, Any]:
    """The provider config a personal config stands for."""
    return REGISTRY[channel].for_account(config, account_email)


def config_errors(
    channel: str, config: Mapping[str, Any], account_email: str, prefix: str
) -> list[tuple[str, str]]:
    """(field, message) for what the channel's rules refuse in ``config``, fields named under
    ``prefix``."""
    try:
        validate_config(channel, resolved(channel, config, account_email))
    except ValidationError as exc:
        return field_errors(exc, prefix)
    return []


def inactive_reasons(record: Mapping[str, Any], channel: str, account_email: str) -> list[str]:
    """Why ``channel`` is not active in the settings ``record``; empty when it is."""
    reasons = []
    if record["notifications"].get(channel) is not True:
        reasons.append(f"notifications.{channel} is off")
    key = config_key(channel)
    config = record.get(key)
    if not isinstance(config, dict) or not config:
        reasons.append(f"{key} is not set")
    else:
        reasons.extend(f"{f}: {m}" for f, m in config_errors(channel, config, account_email, key))
    return reasons


def ordered(channels: Iterable[str], preferred: object) -> list[str]:
    """``channels`` with the preferred one first, the others in their order."""
    listed = list(channels)
    return sorted(listed, key=lambda channel: channel != preferred)


def active_channels(record: Mapping[str, Any], account_email: str) -> list[str]:
    """The active channels of a settings record, ``preferredNotification`` first."""
    active = [c for c in CHANNELS if not inactive_reasons(record, c, account_email)]
    return ordered(active, record.get("preferredNotification"))


def delivery_config(
    record: Mapping[str, Any], account_email: str, channel: str
) -> dict[str, Any] | str:
    """The config to send with on ``channel`` now, or why nothing is sent (read at send time,
    so a channel turned off stops its pending alerts and a fixed URL helps the retries)."""
    reasons = inactive_reasons(record, channel, account_email)
    if reasons:
        return "the personal channel is inactive: " + "; ".join(reasons)
    return validate_config(channel, resolved(channel, record[config_key(channel)], account_email))


def shown(channel: str, config: object) -> object:
    """A config as responses show it: secrets masked as a provider's are."""
    return masked(channel, config) if isinstance(config, dict) and channel in REGISTRY else config


def stored_config(
    channel: str,
    submitted: Mapping[str, Any],
    stored: object,
    account_email: str,
    guard: NetworkGuard,
    field: str,
) -> dict[str, Any]:
    """What to store for a written config (``field``: where the client sent it); raises
    ``ValidationFailed`` naming the failing field.

    ``{}`` unsets. Masked secrets sent back are the stored ones again (as for providers, and
    only for the same destination). A config sent back as stored is kept as it is, valid or
    not, so a client that writes back what it read never fails on an old config; anything new
    must pass the channel's rules and the address guard.
    """
    if not submitted:
        return {}
    before = stored if isinstance(stored, dict) else {}
    try:
        merged = keep_secrets(channel, submitted, before)
    except SecretNotKept as exc:
        raise ValidationFailed.on(
            f"{field}.{exc.name}", "give the secret again when the destination changes"
        ) from exc
    if merged == before:
        return dict(before)
    errors = [
        FieldError(field=f, message=m)
        for f, m in config_errors(channel, merged, account_email, field)
    ]
    if errors:
        raise ValidationFailed("; ".join(f"{e.field}: {e.message}" for e in errors), errors=errors)
    config = validate_config(channel, resolved(channel, merged, account_email))
    for name, why in refused_urls(guard, channel, config):
        raise ValidationFailed.on(f"{field}.{name}", why)
    return REGISTRY[channel].kept_for_account(config, merged)
