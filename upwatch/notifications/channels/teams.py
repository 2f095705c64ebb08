"""Microsoft Teams, through a Power Automate "Workflows" webhook: an Adaptive Card."""

from __future__ import annotations

from typing import Any, Final

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import Personal, Places
from upwatch.notifications.channels.chat import ChatHookChannel
from upwatch.notifications.events import AlertEvent, EventKind

COLORS: Final = {
    EventKind.OPENED: "Attention",
    EventKind.REMINDER: "Warning",
    EventKind.RESOLVED: "Good",
    EventKind.TEST: "Accent",
}


class Teams(ChatHookChannel):
    name = "teams"
    label = N_("Microsoft Teams")
    places = Places(names=5, forms=3, free_plan=4, personal=4)
    plan = "free"
    personal = Personal(views=frozenset({"settings"}))

    def message(self, event: AlertEvent) -> dict[str, Any]:
        card: dict[str, Any] = {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": [
                {
                    "type": "TextBlock",
                    "text": event.headline,
                    "weight": "Bolder",
                    "size": "Medium",
                    "color": COLORS[event.kind],
                    "wrap": True,
                },
                {"type": "TextBlock", "text": event.summary(), "wrap": True},
                {
                    "type": "FactSet",
                    "facts": [{"title": name, "value": value} for name, value in event.facts()],
                },
            ],
        }
        if event.incident_url:
            card["actions"] = [
                {
                    "type": "Action.OpenUrl",
                    "title": event._("Open incident"),
                    "url": event.incident_url,
                }
            ]
        attachment = {
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": None,
            "content": card,
        }
        return {"type": "message", "attachments": [attachment]}


CHANNEL = Teams()
