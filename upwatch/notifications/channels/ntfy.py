"""ntfy, on ntfy.sh or a server of the user's own: a plain-text message published to a topic.

Published as ntfy documents it: ``POST <server>/<topic>`` with the message as the body and the
title, priority, tags and click link as headers; an access token goes as ``Bearer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from email.header import Header
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

# ntfy's priorities: 1 min, 2 low, 3 default, 4 high, 5 max (urgent, sounds on a muted phone).
PRIORITIES: Final = {"critical": 5, "high": 4, "medium": 3, "low": 2}
DEFAULT_PRIORITY: Final = 3  # recoveries and tests
# Tags that match an emoji short code are shown as that emoji before the title.
TAGS: Final = {
    EventKind.OPENED: "rotating_light",
    EventKind.REMINDER: "hourglass",
    EventKind.RESOLVED: "white_check_mark",
    EventKind.TEST: "bell",
}
# ntfy.sh's message limit; a longer body would become an attachment.
MAX_MESSAGE_BYTES: Final = 4096


class NtfyConfig(Input):
    serverUrl: HookUrl = Field(
        default="https://ntfy.sh", description="The ntfy server; ntfy.sh unless given"
    )
    topic: Annotated[
        str,
        Field(
            pattern=worded(r"^[-_A-Za-z0-9]{1,64}$", "1 to 64 letters, digits, - or _"),
            description="The topic to publish to (on ntfy.sh, anyone who knows it can read it)",
        ),
    ]
    accessToken: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=256,
                pattern=worded(r"^[!-~]+$", "printable characters without spaces"),
                description="An access token (tk_...) for a topic that needs one",
            ),
        ]
        | None
    ) = None


def header_text(text: str) -> str:
    """``text`` as a header value: ASCII as it is, anything else as an RFC 2047 encoded word,
    which ntfy decodes (HTTP headers are Latin-1 at best)."""
    text = " ".join(text.split())
    if text.isascii():
        return text
    return Header(text, "utf-8").encode(maxlinelen=0)


def message_body(event: AlertEvent) -> bytes:
    body = "\n".join([event.summary(), *event.lines()]).encode()
    if len(body) <= MAX_MESSAGE_BYTES:
        return body
    return body[: MAX_MESSAGE_BYTES - 3].decode("utf-8", "ignore").encode() + "…".encode()


class Ntfy(HttpChannel):
    name = "ntfy"
    label = N_("ntfy")
    places = Places(names=9, forms=9, personal=6)
    plan = "pro"
    personal = Personal(views=frozenset({"settings"}))
    form = (
        FormField("serverUrl", N_("Server URL (https://ntfy.sh when blank)"), "url", optional=True),
        FormField("topic", N_("Topic"), "text"),
        FormField("accessToken", N_("Access token"), "password", optional=True),
    )
    config_model = NtfyConfig
    secret_fields = ("accessToken",)
    destination_fields = ("serverUrl", "topic")
    url_fields = ("serverUrl",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        server = config.get("serverUrl") or "https://ntfy.sh"
        topic = self.required(config, "topic")
        token = config.get("accessToken") or ""
        quiet = event.kind in (EventKind.RESOLVED, EventKind.TEST)
        priority = DEFAULT_PRIORITY if quiet else PRIORITIES.get(event.severity, 4)
        headers = {
            "Content-Type": "text/plain; charset=utf-8",
            "Title": header_text(event.headline),
            "Priority": str(priority),
            "Tags": TAGS[event.kind],
        }
        if event.incident_url:
            headers["Click"] = event.incident_url
        if token:
            headers["Authorization"] = f"Bearer {token}"
        url = f"{str(server).rstrip('/')}/{topic}"
        await self.post(kit, url, event, data=message_body(event), headers=headers, secrets=[token])


CHANNEL = Ntfy()
