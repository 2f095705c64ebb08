"""Slack, through an incoming webhook: Block Kit with a plain-text fallback."""

from __future__ import annotations

from typing import Any

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import Personal, Places
from upwatch.notifications.channels.chat import ChatHookChannel
from upwatch.notifications.events import AlertEvent


def _escape(text: str) -> str:
    """Slack's three control characters in mrkdwn; nothing else may be entity-encoded."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Slack(ChatHookChannel):
    name = "slack"
    label = N_("Slack")
    places = Places(names=2, forms=1, free_plan=2, personal=2)
    plan = "free"
    personal = Personal(views=frozenset({"profile", "settings"}))

    def message(self, event: AlertEvent) -> dict[str, Any]:
        lines = "\n".join(_escape(line) for line in event.lines())
        blocks: list[dict[str, Any]] = [
            # Header text is plain_text (no escaping) and at most 150 characters.
            {"type": "header", "text": {"type": "plain_text", "text": event.headline[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": lines[:3000]}},
        ]
        if event.incident_url:
            # A "|" would end the URL part of Slack's <url|label> link syntax.
            target = _escape(event.incident_url).replace("|", "%7C")
            label = _escape(event._("Open the incident in Upwatch"))
            link = {
                "type": "mrkdwn",
                "text": f"<{target}|{label}>",
            }
            blocks.append({"type": "context", "elements": [link]})
        # "text" is the notification fallback shown where blocks are not.
        return {"text": _escape(event.headline), "blocks": blocks}


CHANNEL = Slack()
