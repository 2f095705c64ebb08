"""What the channels sent through Twilio's Messages API share: one config, one way of sending,
one form; a channel may put a prefix before the numbers."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar
from urllib.parse import quote

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import DeliveryKit, FormField, HttpChannel
from upwatch.notifications.events import AlertEvent

Phone = Annotated[
    str,
    Field(
        pattern=worded(r"^\+[1-9][0-9]{6,14}$", "a phone number in E.164 form, e.g. +14155550100"),
        description="E.164, e.g. +14155550100",
    ),
]
MAX_BODY_CHARS = 1600  # Twilio's limit for one message


class TwilioConfig(Input):
    to: Phone
    from_: Phone = Field(alias="from")
    accountSid: Annotated[
        str, Field(pattern=worded(r"^AC[0-9a-fA-F]{32}$", "AC followed by 32 hexadecimal digits"))
    ]
    authToken: Annotated[
        str, Field(pattern=worded(r"^[A-Za-z0-9]{16,64}$", "16 to 64 letters and digits"))
    ]


def short_text(event: AlertEvent, limit: int) -> str:
    """The headline and as many body lines as fit in ``limit`` characters."""
    text = event.headline[:limit]
    for line in event.lines():
        # A line that does not fit is skipped, not cut: a later one (the link) may still fit.
        if len(text) + 1 + len(line) <= limit:
            text = f"{text}\n{line}"
    return text


class Twilio(HttpChannel):
    # Put before both numbers, unless they carry it already.
    prefix: ClassVar[str] = ""
    config_model = TwilioConfig
    secret_fields = ("authToken",)
    destination_fields = ("to", "accountSid")
    form = (
        FormField("to", N_("Send to (E.164, e.g. +15551234567)"), "tel"),
        FormField("from", N_("Send from (E.164)"), "tel"),
        FormField("accountSid", N_("Twilio account SID"), "text"),
        FormField("authToken", N_("Twilio auth token"), "password"),
    )

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        account_sid = self.required(config, "accountSid")
        auth_token = self.required(config, "authToken")
        to = self.required(config, "to")
        sender = self.required(config, "from")
        base = kit.settings.twilio_api_url
        url = f"{base}/2010-04-01/Accounts/{quote(account_sid, safe='')}/Messages.json"
        form = {
            "To": self.address(to),
            "From": self.address(sender),
            "Body": short_text(event, MAX_BODY_CHARS),
        }
        # Built by hand: aiohttp.BasicAuth is deprecated, its replacement is new in 3.14.
        credentials = base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()
        headers = {"Authorization": f"Basic {credentials}"}
        await self.post(kit, url, event, data=form, headers=headers, secrets=[auth_token])

    def address(self, number: str) -> str:
        return number if number.startswith(self.prefix) else f"{self.prefix}{number}"
