"""Discord, through a channel webhook: one embed, no mentions."""

from __future__ import annotations

from typing import Any, Final

from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import Personal, Places
from upwatch.notifications.channels.chat import ChatHookChannel
from upwatch.notifications.events import AlertEvent, EventKind, iso

COLORS: Final = {
    EventKind.OPENED: 0xE01E5A,  # red
    EventKind.REMINDER: 0xECB22E,  # amber
    EventKind.RESOLVED: 0x2EB67D,  # green
    EventKind.TEST: 0x3B82F6,  # blue
}
# Discord rejects an embed whose title, description and fields exceed 6000 characters together.
EMBED_CHARS: Final = 6000


class Discord(ChatHookChannel):
    name = "discord"
    label = N_("Discord")
    places = Places(names=4, forms=2, free_plan=3, personal=3)
    plan = "free"
    personal = Personal(views=frozenset({"settings"}))

    def message(self, event: AlertEvent) -> dict[str, Any]:
        title = event.headline[:256]
        description = event.summary()[:4096]
        budget = EMBED_CHARS - len(title) - len(description)
        fields: list[dict[str, Any]] = []
        for name, value in event.facts()[:25]:
            name, value = name[:256], value[:1024]
            if len(name) + len(value) > budget:
                break
            budget -= len(name) + len(value)
            fields.append({"name": name, "value": value, "inline": len(value) <= 40})
        embed: dict[str, Any] = {
            "title": title,
            "description": description,
            "color": COLORS[event.kind],
            "fields": fields,
            "timestamp": iso(event.occurred_at),
        }
        if event.incident_url:
            embed["url"] = event.incident_url
        # No parsed mentions: a monitor named "@everyone" must not ping a whole server.
        return {"username": "Upwatch", "allowed_mentions": {"parse": []}, "embeds": [embed]}


CHANNEL = Discord()
