"""Opsgenie Alert API v2: an incident creates an alert, its resolution closes it.

The alert's alias is the incident's (``upwatch-<incident id>``): Opsgenie folds a reminder
into the open alert with that alias (its count goes up) and the recovery closes it by alias.
The API key is a GenieKey of an "API" integration; the account's region picks the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal
from urllib.parse import quote

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import (
    DeliveryKit,
    FormField,
    HttpChannel,
    Places,
    json_bytes,
)
from upwatch.notifications.events import AlertEvent, EventKind

HOSTS: Final = {"us": "https://api.opsgenie.com", "eu": "https://api.eu.opsgenie.com"}
PRIORITIES: Final = {"critical": "P1", "high": "P2", "medium": "P3", "low": "P4"}
# Opsgenie's limits on the alert fields, in characters.
MESSAGE_CHARS: Final = 130
DESCRIPTION_CHARS: Final = 15000
TAG_CHARS: Final = 50
SOURCE: Final = "Upwatch"


class OpsgenieConfig(Input):
    """Opsgenie: alerts created and closed through the Alert API v2."""

    apiKey: Annotated[
        str,
        Field(
            pattern=worded(
                r"^[A-Za-z0-9-]{20,64}$", "an Opsgenie API key: 20 to 64 letters, digits or -"
            ),
            description="The API key of an Opsgenie API integration (sent as `GenieKey`).",
        ),
    ]
    region: Literal["us", "eu"] = Field(
        default="us",
        description="The Opsgenie account's region: `us` (api.opsgenie.com) or `eu` "
        "(api.eu.opsgenie.com).",
    )


class Opsgenie(HttpChannel):
    name = "opsgenie"
    label = N_("Opsgenie")
    places = Places(names=16, forms=16)
    plan = "pro"
    form = (
        FormField("apiKey", N_("API key"), "password"),
        FormField("region", N_("Region (us or eu)"), "text", optional=True),
    )
    config_model = OpsgenieConfig
    secret_fields = ("apiKey",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        api_key = self.required(config, "apiKey")
        base = kit.settings.opsgenie_api_url or HOSTS.get(config.get("region") or "us")
        if base is None:
            raise self.error("the region is neither us nor eu", retryable=False)
        headers = {"Authorization": f"GenieKey {api_key}", "Content-Type": "application/json"}

        async def call(path: str, body: dict[str, Any]) -> None:
            await self.post(
                kit,
                f"{base}{path}",
                event,
                data=json_bytes(body),
                headers=headers,
                secrets=[api_key],
            )

        def close(alias: str) -> str:
            return f"/v2/alerts/{quote(alias, safe='')}/close?identifierType=alias"

        if event.kind is EventKind.TEST:
            alias = f"upwatch-test-{event.delivery_id}"
            await call("/v2/alerts", self.alert(alias, event))
            # Closed at once so nobody stays paged; a retry creates the same alias again,
            # which Opsgenie folds into the alert should it still be open.
            await call(close(alias), self.closing(event))
            return
        alias = f"upwatch-{event.incident_id or event.delivery_id}"
        if event.kind is EventKind.RESOLVED:
            await call(close(alias), self.closing(event))
        else:
            await call("/v2/alerts", self.alert(alias, event))

    @staticmethod
    def alert(alias: str, event: AlertEvent) -> dict[str, Any]:
        is_test = event.kind is EventKind.TEST
        details = dict(event.facts())
        if event.incident_url:
            details["Incident"] = event.incident_url
        tags = ["upwatch", f"severity:{event.severity}"]
        if event.monitor_type:
            tags.append(f"monitor:{event.monitor_type}")
        body: dict[str, Any] = {
            "message": event.headline[:MESSAGE_CHARS],
            "alias": alias,
            "description": "\n".join(event.lines())[:DESCRIPTION_CHARS],
            "priority": "P5" if is_test else PRIORITIES.get(event.severity, "P2"),
            "source": SOURCE,
            "tags": [tag[:TAG_CHARS] for tag in tags],
            "details": details,
        }
        if event.monitor_name:
            body["entity"] = event.monitor_name[:512]
        return body

    @staticmethod
    def closing(event: AlertEvent) -> dict[str, Any]:
        return {"source": SOURCE, "note": event.headline}


CHANNEL = Opsgenie()
