"""Gotify, a push server of the user's own: ``POST <server>/message`` with an application token.

The token goes in the ``X-Gotify-Key`` header, not in the ``?token=`` query Gotify also takes,
so that it never stands in a URL (proxies and server logs keep those).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DeliveryKit,
    FormField,
    HookUrl,
    HttpChannel,
    Personal,
    Places,
)
from upwatch.notifications.events import AlertEvent, EventKind

# Gotify's Android app: 0 is silent, 1-3 a notification without sound, 4-7 with sound,
# 8-10 a pop-up.
PRIORITIES: Final = {"critical": 10, "high": 8, "medium": 6, "low": 4}
QUIET: Final = 5  # recoveries and tests: heard, but no pop-up


class GotifyConfig(Input):
    serverUrl: HookUrl = Field(description="The Gotify server, e.g. https://push.example.com")
    appToken: Annotated[
        str,
        Field(
            pattern=worded(r"^[A-Za-z0-9._-]{8,128}$", "8 to 128 letters, digits, ., _ or -"),
            description="The token of a Gotify application",
        ),
    ]


class Gotify(HttpChannel):
    name = "gotify"
    label = N_("Gotify")
    places = Places(names=10, forms=10, personal=7)
    plan = "pro"
    personal = Personal(views=frozenset({"settings"}))
    form = (
        FormField("serverUrl", N_("Server URL"), "url"),
        FormField("appToken", N_("Application token"), "password"),
    )
    config_model = GotifyConfig
    secret_fields = ("appToken",)
    destination_fields = ("serverUrl",)
    url_fields = ("serverUrl",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        server = self.required(config, "serverUrl")
        token = self.required(config, "appToken")
        quiet = event.kind in (EventKind.RESOLVED, EventKind.TEST)
        message: dict[str, Any] = {
            "title": event.headline,
            "message": "\n".join([event.summary(), *event.lines()]),
            "priority": QUIET if quiet else PRIORITIES.get(event.severity, 8),
            "extras": {"client::display": {"contentType": "text/plain"}},
        }
        if event.incident_url:
            message["extras"]["client::notification"] = {"click": {"url": event.incident_url}}
        url = f"{server.rstrip('/')}/message"
        headers = {"X-Gotify-Key": token}
        await self.post_json(kit, url, event, message, secrets=[token], headers=headers)


CHANNEL = Gotify()
