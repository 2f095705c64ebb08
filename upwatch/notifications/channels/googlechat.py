"""Google Chat, through a space's incoming webhook: a card (cardsV2) under a one-line text,
every message of an incident in one thread.

The webhook URL (``https://chat.googleapis.com/v1/spaces/<space>/messages?key=…&token=…``)
is the credential, so it is a secret like a Slack webhook URL. Any URL the address guard lets
through is accepted, so tests and proxies can stand in for Google.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from pydantic import Field
from yarl import URL

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DeliveryKit,
    HookUrl,
    Personal,
    Places,
    url_secrets,
)
from upwatch.notifications.channels.chat import ChatHookChannel, ChatHookConfig
from upwatch.notifications.events import AlertEvent


def thread_url(url: str, event: AlertEvent) -> str:
    """``url`` asking Google Chat to put the message in the incident's thread (opened, reminder
    and resolved together), or in a new one when the space has no threads."""
    if event.incident_id is None:
        return url
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return url  # sent as is; the post reports it
    return str(
        parsed.update_query(
            threadKey=f"upwatch-{event.incident_id}",
            messageReplyOption="REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD",
        )
    )


class GoogleChatConfig(ChatHookConfig):
    """Google Chat: a space's incoming webhook (Apps & integrations > Webhooks)."""

    webhookUrl: HookUrl = Field(
        description="The webhook URL, `https://chat.googleapis.com/v1/spaces/<space>/messages"
        "?key=…&token=…` (a secret: shown as scheme, host and port only)."
    )


class GoogleChat(ChatHookChannel):
    name = "googlechat"
    label = N_("Google Chat")
    places = Places(names=15, forms=15, personal=12)
    plan = "pro"
    personal = Personal(views=frozenset({"settings"}))
    config_model = GoogleChatConfig

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        url = self.required(config, "webhookUrl")
        await self.post_json(
            kit, thread_url(url, event), event, self.message(event), secrets=url_secrets(url)
        )

    def message(self, event: AlertEvent) -> dict[str, Any]:
        # A decoratedText's text reads a subset of HTML: the user's words are escaped.
        widgets: list[dict[str, Any]] = [
            {"decoratedText": {"topLabel": name, "text": escape(value, quote=False)}}
            for name, value in event.facts()
        ]
        if event.incident_url:
            link = {"openLink": {"url": event.incident_url}}
            widgets.append(
                {"buttonList": {"buttons": [{"text": event._("Open incident"), "onClick": link}]}}
            )
        card = {
            # Header title and subtitle are plain text.
            "header": {"title": event.headline[:200], "subtitle": event.summary()[:200]},
            "sections": [{"widgets": widgets}],
        }
        # "text" is what the notification and clients without cards show.
        return {"text": event.headline, "cardsV2": [{"cardId": "upwatch-alert", "card": card}]}


CHANNEL = GoogleChat()
