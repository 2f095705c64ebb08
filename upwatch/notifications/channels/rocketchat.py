"""Rocket.Chat, through an incoming webhook integration: a line of text and one attachment
coloured by severity.

The integration's URL (``https://chat.example.com/hooks/<id>/<token>``) is the credential, so
it is a secret like a Slack webhook URL; Rocket.Chat is mostly self-hosted, so any URL the
address guard lets through is accepted.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import HookUrl, Personal, Places
from upwatch.notifications.channels.chat import ChatHookChannel, ChatHookConfig
from upwatch.notifications.events import AlertEvent, EventKind

# An opened incident takes the colour of its severity; the other events one of their own.
SEVERITY_COLORS: Final = {
    "critical": "#B91C1C",
    "high": "#E01E5A",
    "medium": "#ECB22E",
    "low": "#3B82F6",
}
EVENT_COLORS: Final = {
    EventKind.REMINDER: "#ECB22E",
    EventKind.RESOLVED: "#2EB67D",
    EventKind.TEST: "#3B82F6",
}
EMOJIS: Final = {
    EventKind.OPENED: ":rotating_light:",
    EventKind.REMINDER: ":warning:",
    EventKind.RESOLVED: ":white_check_mark:",
    EventKind.TEST: ":bell:",
}


def color(event: AlertEvent) -> str:
    if event.kind is EventKind.OPENED:
        return SEVERITY_COLORS.get(event.severity, SEVERITY_COLORS["high"])
    return EVENT_COLORS[event.kind]


class RocketChatConfig(ChatHookConfig):
    """Rocket.Chat: an incoming webhook integration (Administration > Integrations)."""

    webhookUrl: HookUrl = Field(
        description="The integration's webhook URL, `https://<server>/hooks/<id>/<token>` "
        "(a secret: shown as scheme, host and port only)."
    )


class RocketChat(ChatHookChannel):
    name = "rocketchat"
    label = N_("Rocket.Chat")
    places = Places(names=14, forms=14, personal=11)
    plan = "pro"
    personal = Personal(views=frozenset({"settings"}))
    config_model = RocketChatConfig

    def message(self, event: AlertEvent) -> dict[str, Any]:
        attachment: dict[str, Any] = {
            "title": event.headline,
            "text": event.summary(),
            "color": color(event),
            "fields": [
                {"short": len(value) <= 40, "title": name, "value": value}
                for name, value in event.facts()
            ],
        }
        if event.incident_url:
            attachment["title_link"] = event.incident_url
        # "alias" and "emoji" show as the sender's name and avatar where the integration lets
        # a message override them; Rocket.Chat ignores them otherwise.
        return {
            "alias": "Upwatch",
            "emoji": EMOJIS[event.kind],
            "text": event.headline,
            "attachments": [attachment],
        }


CHANNEL = RocketChat()
