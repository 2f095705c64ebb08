"""What Slack, Discord and Teams share: a message in JSON posted to an incoming-webhook URL."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DeliveryKit,
    FormField,
    HookUrl,
    HttpChannel,
    url_secrets,
)
from upwatch.notifications.events import AlertEvent


class ChatHookConfig(Input):
    webhookUrl: HookUrl


class ChatHookChannel(HttpChannel):
    config_model = ChatHookConfig
    # The path of a chat webhook URL is its credential.
    secret_fields = ("webhookUrl",)
    url_fields = ("webhookUrl",)
    form = (FormField("webhookUrl", N_("Incoming webhook URL"), "url"),)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        url = self.required(config, "webhookUrl")
        await self.post_json(kit, url, event, self.message(event), secrets=url_secrets(url))

    @abstractmethod
    def message(self, event: AlertEvent) -> dict[str, Any]:
        """The JSON body the service shows."""
