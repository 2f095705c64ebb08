"""The pure rules of personal channels (notifications/personal.py)."""

from __future__ import annotations

from upwatch.notifications import personal


def test_the_preferred_channel_goes_first_and_the_others_keep_their_order() -> None:
    assert personal.ordered(["email", "slack", "webhook"], "webhook") == [
        "webhook",
        "email",
        "slack",
    ]
    assert personal.ordered(["email", "slack"], "teams") == ["email", "slack"]


def test_only_the_config_keys_of_personal_channels_name_a_channel() -> None:
    assert personal.channel_of("slackConfig") == "slack"
    assert personal.channel_of("smsConfig") == "sms"
    assert personal.channel_of("telegramConfig") is None  # no switch in the settings
    assert personal.channel_of("slack") is None


def test_email_without_addresses_goes_to_the_accounts_own_address() -> None:
    record = personal.complete({"emailConfig": {"to": []}})
    assert personal.active_channels(record, "me@example.com") == ["email"]
    assert personal.delivery_config(record, "me@example.com", "email") == {"to": ["me@example.com"]}
    given = personal.complete({"emailConfig": {"to": ["pager@example.com"]}})
    assert personal.delivery_config(given, "me@example.com", "email") == {
        "to": ["pager@example.com"]
    }


def test_the_seed_defaults_activate_nothing() -> None:
    record = personal.complete({})
    assert personal.active_channels(record, "me@example.com") == []
    assert personal.delivery_config(record, "me@example.com", "email") == (
        "the personal channel is inactive: emailConfig is not set"
    )
