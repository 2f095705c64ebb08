"""PagerDuty Events API v2: an incident triggers an alert, its resolution resolves it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.notifications.channels.base import DeliveryKit, FormField, HttpChannel, Places
from upwatch.notifications.events import AlertEvent, EventKind, iso

SEVERITIES: Final = {
    "critical": "critical",
    "high": "error",
    "medium": "warning",
    "low": "info",
}


class PagerDutyConfig(Input):
    routingKey: Annotated[
        str,
        Field(
            pattern=worded(r"^[A-Za-z0-9]{20,64}$", "20 to 64 letters and digits"),
            description="Events API v2 integration key",
        ),
    ]


class PagerDuty(HttpChannel):
    name = "pagerduty"
    label = N_("PagerDuty")
    places = Places(names=8, forms=6)
    plan = "pro"
    form = (FormField("routingKey", N_("Routing key"), "password"),)
    config_model = PagerDutyConfig
    secret_fields = ("routingKey",)

    async def send(self, config: Mapping[str, Any], event: AlertEvent, kit: DeliveryKit) -> None:
        routing_key = self.required(config, "routingKey")

        async def enqueue(message: dict[str, Any]) -> None:
            url = f"{kit.settings.pagerduty_events_url}/v2/enqueue"
            await self.post_json(kit, url, event, message, secrets=[routing_key])

        if event.kind is EventKind.TEST:
            dedup_key = f"upwatch-test-{event.delivery_id}"
            await enqueue(self.trigger(routing_key, dedup_key, event, kit))
            # Resolved at once so nobody stays paged. Should this fail, the retry triggers the
            # same dedup key again, which PagerDuty folds into the alert that is still open.
            await enqueue(self.resolve(routing_key, dedup_key))
            return
        dedup_key = f"upwatch-{event.incident_id or event.delivery_id}"
        if event.kind is EventKind.RESOLVED:
            await enqueue(self.resolve(routing_key, dedup_key))
        else:
            await enqueue(self.trigger(routing_key, dedup_key, event, kit))

    @staticmethod
    def trigger(
        routing_key: str, dedup_key: str, event: AlertEvent, kit: DeliveryKit
    ) -> dict[str, Any]:
        is_test = event.kind is EventKind.TEST
        opened = event.kind is EventKind.OPENED
        details: dict[str, Any] = {
            event._("What failed") if opened else event._("Summary"): event.summary()
        }
        details.update(event.facts())
        if event.incident_url:
            details["Incident"] = event.incident_url
        payload: dict[str, Any] = {
            "summary": event.headline[:1024],
            "source": event.monitor_target or event.monitor_name or "upwatch",
            "severity": "info" if is_test else SEVERITIES.get(event.severity, "error"),
            "timestamp": iso(event.occurred_at),
            "group": event.project_name,
            "custom_details": details,
        }
        if event.monitor_name:
            payload["component"] = event.monitor_name
        if event.failure is not None and event.failure.kind:
            payload["class"] = event.failure.kind
        message: dict[str, Any] = {
            "routing_key": routing_key,
            "event_action": "trigger",
            "dedup_key": dedup_key,
            "payload": payload,
            "client": "Upwatch",
            "client_url": kit.settings.public_url,
        }
        if event.incident_url:
            message["links"] = [{"href": event.incident_url, "text": event._("Upwatch incident")}]
        return message

    @staticmethod
    def resolve(routing_key: str, dedup_key: str) -> dict[str, Any]:
        return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup_key}


CHANNEL = PagerDuty()
