"""Mattermost, through an incoming webhook: Markdown text, a username, and the facts as the
message's card (``props.card``, shown beside the message when it is opened)."""

from __future__ import annotations

import re
from typing import Any, Final

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import Places
from upwatch.notifications.channels.chat import ChatHookChannel
from upwatch.notifications.events import AlertEvent

# Mattermost's limit for one post (a longer text is split into several posts).
MAX_TEXT: Final = 16_383
_MARKDOWN: Final = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def escape(text: str) -> str:
    """User text as literal Markdown: punctuation escaped, and no @-mention (a monitor named
    "@all" must not notify a whole team); a zero-width space after "@" breaks the mention."""
    return _MARKDOWN.sub(r"\\\1", text).replace("@", "@\u200b")


class Mattermost(ChatHookChannel):
    name = "mattermost"
    label = N_("Mattermost")
    places = Places(names=13, forms=13)
    plan = "pro"

    def message(self, event: AlertEvent) -> dict[str, Any]:
        lines = [f"#### {escape(event.headline)}", escape(event.summary())]
        lines += [escape(line) for line in event.lines() if line != event.incident_line]
        if event.incident_url:
            target = event.incident_url.replace(")", "%29").replace(" ", "%20")
            label = escape(event._("Open the incident in Upwatch"))
            lines.append(f"[{label}]({target})")
        card = "\n".join(f"**{escape(name)}:** {escape(value)}" for name, value in event.facts())
        return {
            "text": "\n".join(lines)[:MAX_TEXT],
            "username": "Upwatch",
            "props": {"card": card[:MAX_TEXT]},
        }


CHANNEL = Mattermost()
