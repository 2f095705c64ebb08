"""Matrix, through the client-server API v3: an ``m.room.message`` sent to one room by an
account (usually a bot's) whose access token the channel holds.

The message is sent with ``PUT .../send/m.room.message/{txnId}``; the transaction id is the
alert's delivery id, so a retry of the same alert is deduplicated by the homeserver instead
of being shown twice.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Annotated, Any, Final
from urllib.parse import quote

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DeliveryKit,
    FormField,
    HookUrl,
    HttpChannel,
    Places,
)
from upwatch.notifications.events import AlertEvent, EventKind

COLORS: Final = {
    EventKind.OPENED: "#e01e5a",
    EventKind.REMINDER: "#ecb22e",
    EventKind.RESOLVED: "#2eb67d",
    EventKind.TEST: "#3b82f6",
}


class MatrixConfig(Input):
    homeserverUrl: HookUrl = Field(
        description="The homeserver's client API, e.g. https://matrix.example.org"
    )
    roomId: Annotated[
        str,
        Field(
            pattern=worded(
                r"^![!-9;-~]{1,200}:[!-~]{1,255}$",
                "a room id as Matrix shows it, e.g. !AbCdEf:example.org (not a #room alias)",
            ),
            description="The room's id (its settings show it); the posting account must have "
            "joined the room",
        ),
    ]
    accessToken: Annotated[
        str,
        Field(
            min_length=8,
            max_length=1024,
            pattern=worded(r"^[!-~]+$", "printable characters without spaces"),
            description="The access token of the account that posts (usually a bot's)",
        ),
    ]


def formatted(event: AlertEvent) -> str:
    """The message as Matrix HTML: the headline in bold and colour, then the lines."""
    color = COLORS[event.kind]
    parts = [f'<strong><font color="{color}">{html.escape(event.headline)}</font></strong>']
    parts.append(html.escape(event.summary()))
    for line in event.lines():
        if event.incident_url and line == event.incident_line:
            link = html.escape(event.incident_url, quote=True)
            label = html.escape(event._("Open the incident in Upwatch"))
            parts.append(f'<a href="{link}">{label}</a>')
        else:
            parts.append(html.escape(line))
    return "<br>".join(parts)


class Matrix(HttpChannel):
    name = "matrix"
    label = N_("Matrix")
    places = Places(names=12, forms=12)
    plan = "pro"
    form = (
        FormField("homeserverUrl", N_("Homeserver URL"), "url"),
        FormField("roomId", N_("Room id (!…:server)"), "text"),
        FormField("accessToken", N_("Access token"), "password"),
    )
    config_model = MatrixConfig
    secret_fields = ("accessToken",)
    destination_fields = ("homeserverUrl", "roomId")
    url_fields = ("homeserverUrl",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        server = self.required(config, "homeserverUrl")
        room = self.required(config, "roomId")
        token = self.required(config, "accessToken")
        url = (
            f"{server.rstrip('/')}/_matrix/client/v3/rooms/{quote(room, safe='')}"
            f"/send/m.room.message/{quote(event.delivery_id, safe='')}"
        )
        message = {
            "msgtype": "m.text",
            "body": event.text,
            "format": "org.matrix.custom.html",
            "formatted_body": formatted(event),
        }
        headers = {"Authorization": f"Bearer {token}"}
        await self.post_json(
            kit, url, event, message, secrets=[token], headers=headers, method="PUT"
        )


CHANNEL = Matrix()
