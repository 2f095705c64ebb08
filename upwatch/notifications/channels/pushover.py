"""Pushover, through its Message API: a form POST to ``/1/messages.json`` with the
application's token and the user's (or group's) key.

Emergency priority (2) is not used: it repeats until acknowledged in Pushover, and Upwatch's
own acknowledgement would not stop it.
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
    HttpChannel,
    Personal,
    Places,
    service_error,
)
from upwatch.notifications.events import AlertEvent, EventKind

# Pushover's priorities: -2 silent, -1 quiet, 0 normal, 1 high (sounds in the user's quiet
# hours), 2 emergency.
PRIORITIES: Final = {"critical": 1, "high": 1, "medium": 0, "low": -1}
# Pushover's limits, in characters.
MAX_TITLE: Final = 250
MAX_MESSAGE: Final = 1024
MAX_URL: Final = 512

Key = Annotated[
    str, Field(pattern=worded(r"^[A-Za-z0-9]{30}$", "30 letters and digits, as Pushover shows it"))
]


class PushoverConfig(Input):
    userKey: Key = Field(description="The user or group key to notify")
    appToken: Key = Field(description="The API token of your Pushover application")
    device: (
        Annotated[
            str,
            Field(
                pattern=worded(
                    r"^[A-Za-z0-9_-]{1,25}(,[A-Za-z0-9_-]{1,25}){0,9}$",
                    "device names (up to 25 letters, digits, _ or -), separated by commas",
                ),
                description="Only these devices of the user (all when left out)",
            ),
        ]
        | None
    ) = None


def short_message(event: AlertEvent) -> str:
    """The summary and as many body lines as fit; a line that does not fit is skipped."""
    text = event.summary()[:MAX_MESSAGE]
    for line in event.lines():
        if len(text) + 1 + len(line) <= MAX_MESSAGE:
            text = f"{text}\n{line}"
    return text


class Pushover(HttpChannel):
    name = "pushover"
    label = N_("Pushover")
    places = Places(names=11, forms=11, personal=8)
    plan = "pro"
    personal = Personal(views=frozenset({"settings"}))
    form = (
        FormField("userKey", N_("User or group key"), "text"),
        FormField("appToken", N_("Application API token"), "password"),
        FormField("device", N_("Devices (all when blank)"), "text", optional=True),
    )
    config_model = PushoverConfig
    secret_fields = ("appToken",)
    destination_fields = ("userKey", "device")

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        token = self.required(config, "appToken")
        user = self.required(config, "userKey")
        quiet = event.kind in (EventKind.RESOLVED, EventKind.TEST)
        form = {
            "token": token,
            "user": user,
            "title": event.headline[:MAX_TITLE],
            "message": short_message(event),
            "priority": str(0 if quiet else PRIORITIES.get(event.severity, 1)),
            "timestamp": str(int(event.occurred_at.timestamp())),
        }
        if isinstance(device := config.get("device"), str) and device:
            form["device"] = device
        if event.incident_url and len(event.incident_url) <= MAX_URL:
            form["url"] = event.incident_url
            form["url_title"] = event._("Open the incident in Upwatch")
        url = f"{kit.settings.pushover_api_url}/1/messages.json"
        reply = await self.post(kit, url, event, data=form, secrets=[token])
        answer = reply.json()
        # Pushover answers {"status": 1, "request": ...} when it took the message.
        if isinstance(answer, dict) and answer.get("status") == 1:
            return
        detail = service_error(reply.body) if reply.body else "no answer"
        raise self.error(
            f"HTTP {reply.status}: not accepted: {detail}",
            retryable=not isinstance(answer, dict),
            secrets=[token],
        )


CHANNEL = Pushover()
