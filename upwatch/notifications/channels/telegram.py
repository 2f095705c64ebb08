"""Telegram, through the Bot API's sendMessage: plain text to one chat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DeliveryKit,
    FormField,
    HttpChannel,
    Places,
    service_error,
)
from upwatch.notifications.events import AlertEvent


class TelegramConfig(Input):
    botToken: Annotated[
        str,
        Field(
            pattern=worded(
                r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$",
                "a bot token as BotFather gives it: digits, a colon, then 20 to 100 letters, "
                "digits, _ or -",
            )
        ),
    ]
    chatId: Annotated[
        str,
        Field(
            pattern=worded(
                r"^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$",
                "a numeric chat id (e.g. -1001234567890) or a public channel name (e.g. @status)",
            )
        ),
    ]


class Telegram(HttpChannel):
    name = "telegram"
    label = N_("Telegram")
    places = Places(names=6, forms=5, free_plan=5)
    plan = "free"
    form = (
        FormField("botToken", N_("Bot token"), "password"),
        FormField("chatId", N_("Chat id or @channel"), "text"),
    )
    config_model = TelegramConfig
    secret_fields = ("botToken",)
    destination_fields = ("chatId",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        token = self.required(config, "botToken")
        chat_id = self.required(config, "chatId")
        # The token is a path segment: quoted, so that it cannot reach another API method.
        url = f"{kit.settings.telegram_api_url}/bot{quote(token, safe=':')}/sendMessage"
        # Plain text (no parse_mode): user text needs no escaping and cannot break the markup.
        message = {"chat_id": chat_id, "text": event.text[:4096], "disable_web_page_preview": True}
        reply = await self.post_json(kit, url, event, message, secrets=[token])
        answer = reply.json()
        if isinstance(answer, dict) and answer.get("ok") is True:
            return
        if not isinstance(answer, dict):
            raise self.error(f"HTTP {reply.status}: not a Bot API answer", retryable=True)
        code = answer.get("error_code")
        retryable = isinstance(code, int) and (code == 429 or code >= 500)
        detail = service_error(reply.body)
        raise self.error(f"HTTP {reply.status}: {detail}", retryable=retryable, secrets=[token])


CHANNEL = Telegram()
